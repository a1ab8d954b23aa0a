// Start-up cost of 1,000 endpoint classes through Kit, against registering the same 1,000 routes
// on Fastify by hand. Prints one JSON line: { mode, ms } measured from before the first
// registration to ready. `node --import tsx bench/startup.ts kit|manual [count]`
import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit, type EndpointClass } from '@kit/core';

const mode = process.argv[2] ?? 'kit';
const count = Number(process.argv[3] ?? 1000);

function name(i: number): string {
  // Letters only, so no class name looks like a bundler's renaming.
  let s = '';
  let n = i;
  do {
    s = String.fromCharCode(65 + (n % 26)) + s.toLowerCase();
    n = Math.floor(n / 26);
  } while (n > 0);
  return `Resource${s}Endpoint`;
}

const classes: EndpointClass[] = [];
for (let i = 0; i < count; i++) {
  const cls = class {
    addRoutes(app: FastifyInstance) {
      app.get('items', async () => i);
    }
  };
  Object.defineProperty(cls, 'name', { value: name(i) });
  classes.push(cls);
}

const app = Fastify();
const started = performance.now();
if (mode === 'kit') {
  addKit(app, classes, (opt) => {
    opt.enableHealthChecks = false;
  });
  await useKit(app);
} else {
  for (let i = 0; i < count; i++) {
    const group = name(i).replace(/Endpoint$/, '');
    const segment = group[0]!.toLowerCase() + group.slice(1);
    app.register(
      async (scope) => {
        scope.get(
          '/items',
          { schema: { operationId: `${segment}_GET_items`, tags: [segment] } },
          async () => i,
        );
      },
      { prefix: `/api/${segment}` },
    );
  }
}
await app.ready();
const ms = performance.now() - started;
const routes = app
  .printRoutes()
  .split('\n')
  .filter((l) => l.includes('items')).length;
process.stdout.write(`${JSON.stringify({ mode, count, ms, routes })}\n`);
await app.close();
