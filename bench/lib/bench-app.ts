/** Writes a throwaway definitions directory with one app, `bench`, for a benchmark core. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `appYaml` is the whole app.yaml; `files` are app-relative paths and their content. */
export function writeBenchApp(appYaml: string, files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-'));
  const appDir = path.join(dir, 'apps', 'bench');
  mkdirSync(appDir, { recursive: true });
  writeFileSync(path.join(appDir, 'app.yaml'), appYaml);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(appDir, file)), { recursive: true });
    writeFileSync(path.join(appDir, file), content);
  }
  return dir;
}

/** The component the dispatch benchmarks run: through the core it reads the path, sent directly the trigger payload. */
const HELLO_SCRIPT =
  'export const hello = (event) => ({ hello: event.httpDetails?.pathParameters.name ?? event.triggerDetails.payload.name, pid: process.pid });\n';

/**
 * The dispatch benchmarks' app: one pool `p` with the given fields (YAML flow-map
 * entries, e.g. `minWarm: 2, maxSize: 2, limits: {...}`), and `GET /hello/:name`
 * running HELLO_SCRIPT on it.
 */
export function writeHelloApp(poolFields: string): string {
  return writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools: [{ name: p, ${poolFields} }]
  components: [{ id: hello, handler: JIT, pool: p, jit: { script: scripts/behaviours.mjs, function: hello } }]
  routes: [{ http: { method: GET, path: /hello/:name }, component: hello }]
`,
    { 'scripts/behaviours.mjs': HELLO_SCRIPT },
  );
}
