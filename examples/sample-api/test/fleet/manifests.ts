// The manifests of deploy/kubernetes, read as the tests read them.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { ProbeSettings } from '@kit/test-support/haproxy';

const MANIFESTS = fileURLToPath(new URL('../../../../deploy/kubernetes/', import.meta.url));

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  [key: string]: unknown;
};

export function manifests(dir = MANIFESTS): Array<{ file: string; doc: Manifest }> {
  const out: Array<{ file: string; doc: Manifest }> = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    for (const d of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      if (d.errors.length > 0)
        throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
      out.push({ file, doc: d.toJS() as Manifest });
    }
  }
  return out;
}

/** The readiness probe of deploy/kubernetes/deployment.yaml, as the balancer's checks in the rolling-deploy test. */
export function manifestReadinessProbe(): ProbeSettings {
  const deployment = manifests().find((m) => m.doc.kind === 'Deployment')!.doc as unknown as {
    spec: {
      template: {
        spec: {
          containers: Array<{
            readinessProbe: {
              periodSeconds: number;
              failureThreshold: number;
              successThreshold?: number;
              timeoutSeconds: number;
            };
          }>;
        };
      };
    };
  };
  const r = deployment.spec.template.spec.containers[0]!.readinessProbe;
  return {
    intervalMs: r.periodSeconds * 1000,
    fall: r.failureThreshold,
    rise: r.successThreshold ?? 1,
    timeoutMs: r.timeoutSeconds * 1000,
  };
}
