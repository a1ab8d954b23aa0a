// @test-lines: once - compiler: static manifests against the API schemas and tsc (lineIndependent)
// deploy/kubernetes: validated against the Kubernetes 1.36 API, and its numbers checked against
// Kit's defaults and the sample's checks so that they cannot drift apart.
//
// Validation, offline, from the npm registry: kubernetes-models 5.1 (JSON Schemas compiled from
// the official Kubernetes OpenAPI documents, 1.36.0 the newest) checks types, required fields and
// formats; kubectl cannot (Debian's kubectl 1.20 needs an API server even for --dry-run=client,
// and kubeconform is on neither npm nor Debian). Those schemas, like the API server's, accept
// unknown fields, and they merge older releases' APIs, so two checks make them strict: every
// apiVersion/kind must be one 1.36 serves, and the manifests must type-check as kubernetes-models'
// interfaces under TypeScript, whose excess-property check rejects any unknown field at any depth
// (a `periodSecond` typo).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { KitOption } from '@kit/core';
import { DEFAULT_CHECK_TIMEOUT_MS } from '../../../packages/core/src/health/constants.ts';
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  PRODUCTION_SHUTDOWN_DELAY_MS,
} from '../../../packages/core/src/lifecycle/shutdown-options.ts';
import { lineIndependent } from '@kit/test-support/heavy';
import { createApp } from '../src/app.ts';
import { parseDockerfile } from './fleet/dockerfile.ts';
import { manifests, type Manifest } from './fleet/manifests.ts';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

// What Kubernetes 1.36 serves, for the kinds deploy/ uses: the model to validate each with.
const SERVED: Record<string, { module: string; type: string }> = {
  'apps/v1 Deployment': { module: 'kubernetes-models/apps/v1/Deployment', type: 'IDeployment' },
  'v1 Service': { module: 'kubernetes-models/v1/Service', type: 'IService' },
  'policy/v1 PodDisruptionBudget': {
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    type: 'IPodDisruptionBudget',
  },
};

/** kubernetes-models' JSON Schema validation; throws with the schema's message. */
async function validateSchema(doc: Manifest): Promise<void> {
  const served = SERVED[`${doc.apiVersion} ${doc.kind}`];
  if (!served)
    throw new Error(
      `${doc.apiVersion} ${doc.kind} is not served by Kubernetes 1.36 (or not expected in deploy/)`,
    );
  const mod = (await import(served.module)) as Record<
    string,
    new (data: unknown) => { validate(): void }
  >;
  const Model = mod[doc.kind]!;
  new Model(doc).validate();
}

/** The strict check: each document as an object literal of its kubernetes-models interface, type-checked. */
async function typeCheck(docs: Manifest[]): Promise<string> {
  const dir = path.join(REPO, '.tmp', `manifests-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const lines: string[] = [];
  docs.forEach((doc, i) => {
    const served = SERVED[`${doc.apiVersion} ${doc.kind}`]!;
    lines.push(
      `import type { ${served.type} as T${i} } from '${served.module}';`,
      `export const doc${i}: T${i} = ${JSON.stringify(doc, null, 2)};`,
    );
  });
  writeFileSync(path.join(dir, 'manifests.ts'), lines.join('\n'));
  try {
    const tsc = path.join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
    await run(process.execPath, [
      tsc,
      '--noEmit',
      '--strict',
      '--skipLibCheck',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      path.join(dir, 'manifests.ts'),
    ]);
    return '';
  } catch (err) {
    return (err as { stdout?: string }).stdout ?? String(err);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Static files against the API's schemas and the TypeScript compiler: the same on every Node line.
lineIndependent('deploy/kubernetes against the Kubernetes 1.36 API', () => {
  describe('deploy/kubernetes against the Kubernetes 1.36 API', () => {
    const all = manifests();

    it('holds the Deployment, its Service and its PodDisruptionBudget, each valid against its schema', async () => {
      assert.deepEqual(
        all.map((m) => `${m.doc.apiVersion} ${m.doc.kind}`).sort(),
        Object.keys(SERVED).sort(),
      );
      for (const { file, doc } of all)
        await validateSchema(doc).catch((err: Error) => assert.fail(`${file}: ${err.message}`));
    });

    it('has no unknown field anywhere (TypeScript checks them as kubernetes-models interfaces)', async () => {
      assert.equal(await typeCheck(all.map((m) => m.doc)), '');
    });

    it('the validation is real: a mistyped field, a wrong type, a missing field and a removed API are each refused', async () => {
      const deployment = all.find((m) => m.doc.kind === 'Deployment')!.doc;
      const clone = () =>
        JSON.parse(JSON.stringify(deployment)) as Manifest & {
          spec: {
            template: { spec: { containers: Array<Record<string, Record<string, unknown>>> } };
          };
        };
      const typo = clone();
      const probe = typo.spec.template.spec.containers[0]!.readinessProbe!;
      probe.periodSecond = probe.periodSeconds;
      delete probe.periodSeconds;
      await validateSchema(typo); // the schemas let unknown fields through, as the API server's do
      assert.match(await typeCheck([typo]), /periodSecond/);
      const wrongType = clone();
      wrongType.spec.template.spec.containers[0]!.readinessProbe!.failureThreshold = 'two';
      await assert.rejects(validateSchema(wrongType), /failureThreshold must be integer/);
      const missing = clone();
      delete (missing.spec.template.spec.containers[0] as Record<string, unknown>).name;
      await assert.rejects(
        validateSchema(missing),
        /containers\/0 must have required property name/,
      );
      await assert.rejects(
        validateSchema({
          ...all.find((m) => m.doc.kind === 'PodDisruptionBudget')!.doc,
          apiVersion: 'policy/v1beta1',
        }),
        /not served by Kubernetes 1\.36/,
      );
    });
  });
});

describe("deploy/ follows Kit's defaults", () => {
  const all = manifests();
  const deployment = all.find((m) => m.doc.kind === 'Deployment')!.doc as unknown as {
    spec: {
      replicas: number;
      selector: { matchLabels: Record<string, string> };
      strategy: { rollingUpdate: { maxUnavailable: number; maxSurge: number } };
      template: {
        metadata: { labels: Record<string, string> };
        spec: {
          terminationGracePeriodSeconds: number;
          containers: Array<{
            ports: Array<{ name: string; containerPort: number }>;
            env: Array<{ name: string; value?: string }>;
            lifecycle?: unknown;
            readinessProbe: Probe;
            livenessProbe: Probe;
            startupProbe: Probe;
          }>;
        };
      };
    };
  };
  interface Probe {
    httpGet: { path: string; port: string | number };
    periodSeconds: number;
    failureThreshold: number;
    successThreshold?: number;
    timeoutSeconds: number;
  }
  const container = deployment.spec.template.spec.containers[0]!;
  const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
  const shutdownDelayMs =
    env.SHUTDOWN_DELAY_MS === undefined
      ? env.NODE_ENV === 'production'
        ? PRODUCTION_SHUTDOWN_DELAY_MS
        : 0
      : Number(env.SHUTDOWN_DELAY_MS);

  it("the probes point at Kit's routes: readiness /healthz, liveness and start-up /livez, on the container's port", () => {
    const kit = new KitOption();
    assert.equal(container.readinessProbe.httpGet.path, kit.healthCheckPath);
    assert.equal(container.livenessProbe.httpGet.path, '/livez');
    assert.equal(container.startupProbe.httpGet.path, '/livez');
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe])
      assert.ok(container.ports.some((p) => p.name === probe.httpGet.port));
  });

  it('the readiness probe takes the pod out of rotation well inside the shutdown delay (with 2 s left for endpoint propagation)', () => {
    assert.equal(env.NODE_ENV, 'production', 'the production default delay applies');
    assert.equal(shutdownDelayMs, 5000);
    const r = container.readinessProbe;
    assert.ok(
      r.periodSeconds * r.failureThreshold * 1000 + 2000 <= shutdownDelayMs,
      `${r.periodSeconds} s x ${r.failureThreshold} + 2 s <= ${shutdownDelayMs} ms`,
    );
    assert.equal(
      container.lifecycle,
      undefined,
      "no preStop: the delay is Kit's, inside the process (a preStop sleep would add to it)",
    );
  });

  it("each probe waits longer than the slowest check it runs: the sample's checks, AutoCrud's and Redis's", async () => {
    const app = createApp({
      adminApiKey: 'x',
      logger: false,
      databaseUrl: 'postgres://kit@127.0.0.1:9/none',
      redisUrl: 'redis://127.0.0.1:9',
    });
    const timeouts = app.kit.healthChecks.registrations().map((r) => r.timeoutMs);
    await app.close().catch(() => undefined);
    assert.ok(timeouts.includes(DEFAULT_CHECK_TIMEOUT_MS));
    assert.ok(
      container.readinessProbe.timeoutSeconds * 1000 > Math.max(...timeouts),
      `readiness timeoutSeconds ${container.readinessProbe.timeoutSeconds} vs checks ${timeouts.join(', ')} ms`,
    );
    // /livez runs no check: Kubernetes' default second is enough.
    assert.ok(container.livenessProbe.timeoutSeconds >= 1);
    assert.ok(
      container.livenessProbe.periodSeconds * container.livenessProbe.failureThreshold >= 10,
      'a long pause is not a restart',
    );
  });

  it("terminationGracePeriodSeconds covers the shutdown delay and Kit's drain bound, so SIGKILL never cuts a drain", () => {
    const grace = deployment.spec.template.spec.terminationGracePeriodSeconds * 1000;
    assert.ok(
      grace >= shutdownDelayMs + DEFAULT_DRAIN_TIMEOUT_MS + 1000,
      `${grace} ms >= ${shutdownDelayMs} + ${DEFAULT_DRAIN_TIMEOUT_MS} + 1000`,
    );
  });

  it('the image and the manifests agree: the port, the production environment; the rollout and the budget keep capacity', () => {
    const docker = parseDockerfile(readFileSync(path.join(REPO, 'deploy', 'Dockerfile'), 'utf8'));
    const runtimeEnv = docker.filter((i) => i.keyword === 'ENV').at(-1)!.args;
    assert.match(runtimeEnv, /PORT=3000/);
    assert.equal(docker.filter((i) => i.keyword === 'EXPOSE').at(-1)!.args, '3000');
    assert.deepEqual(
      container.ports.map((p) => p.containerPort),
      [3000],
    );
    assert.equal(env.PORT, '3000');
    assert.ok(deployment.spec.replicas >= 2);
    assert.equal(deployment.spec.strategy.rollingUpdate.maxUnavailable, 0);
    const pdb = all.find((m) => m.doc.kind === 'PodDisruptionBudget')!.doc as unknown as {
      spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
    };
    assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
    assert.ok(pdb.spec.maxUnavailable < deployment.spec.replicas);
    const service = all.find((m) => m.doc.kind === 'Service')!.doc as unknown as {
      spec: { selector: Record<string, string>; ports: Array<{ targetPort: string }> };
    };
    for (const [k, v] of Object.entries(service.spec.selector))
      assert.equal(deployment.spec.template.metadata.labels[k], v);
    assert.ok(container.ports.some((p) => p.name === service.spec.ports[0]!.targetPort));
  });
});
