import { readFile, readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { renderCrdFiles } from './crd-documents.js';
import { CRDS_DIR } from './generate-crds.js';

// CI's guard that crds/ is what the TypeBox schemas generate: edit the schema, then run `npm run generate`.
describe('crds/', () => {
  const generated = renderCrdFiles();

  it('holds exactly the generated files', async () => {
    const onDisk = (await readdir(CRDS_DIR)).filter((file) => file.endsWith('.yaml')).sort();
    expect(onDisk).toEqual([...generated.keys()].sort());
  });

  for (const [file, text] of generated) {
    it(`${file} matches the schemas (run \`npm run generate\` when this fails)`, async () => {
      expect(await readFile(`${CRDS_DIR}${file}`, 'utf8')).toBe(text);
    });
  }
});
