/**
 * `npm run generate`: writes crds/*.yaml from the TypeBox schemas. The unit test
 * crd-files.test.ts fails when the committed files differ from what this writes.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderCrdFiles } from './crd-documents.js';

/** The crds/ directory at the repository root. */
export const CRDS_DIR = fileURLToPath(new URL('../../crds/', import.meta.url));

/** Writes every CRD file and returns the paths written. */
export async function writeCrdFiles(dir: string = CRDS_DIR): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const [file, text] of renderCrdFiles()) {
    const path = `${dir}${file}`;
    await writeFile(path, text);
    written.push(path);
  }
  return written;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const path of await writeCrdFiles()) console.log(`wrote ${path}`);
}
