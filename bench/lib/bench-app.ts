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
