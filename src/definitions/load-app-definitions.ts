/**
 * Reads every `apps/<appId>/app.yaml` of a materialized revision. A broken file
 * is reported and skipped; it never keeps the other apps from loading.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type { AppDefinitionDocument } from './app-definition-schema.js';
import { validateAppDefinition, type DefinitionProblem } from './validate-app-definition.js';

export interface LoadedDefinitions {
  readonly documents: ReadonlyArray<{ file: string; document: AppDefinitionDocument }>;
  readonly problems: readonly DefinitionProblem[];
}

export async function loadAppDefinitions(revisionDir: string): Promise<LoadedDefinitions> {
  const appsDir = path.join(revisionDir, 'apps');
  const documents: Array<{ file: string; document: AppDefinitionDocument }> = [];
  const problems: DefinitionProblem[] = [];
  if (!existsSync(appsDir)) return { documents, problems };

  const names = (await readdir(appsDir, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  for (const name of names) {
    const file = `apps/${name}/app.yaml`;
    const absolute = path.join(revisionDir, file);
    if (!existsSync(absolute)) {
      problems.push({ file, path: '/', reason: 'the app directory has no app.yaml' });
      continue;
    }
    const source = await readFile(absolute, 'utf8');
    const parsed = parseDocument(source, { prettyErrors: true, uniqueKeys: true });
    if (parsed.errors.length > 0) {
      const error = parsed.errors[0]!;
      const at = error.linePos?.[0];
      // prettyErrors appends a source excerpt and repeats the position; keep the sentence.
      const reason = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      problems.push({ file, path: '/', reason: at ? `YAML line ${at.line} column ${at.col}: ${reason}` : `YAML: ${reason}` });
      continue;
    }
    const appDir = path.join(appsDir, name);
    const result = validateAppDefinition(parsed.toJS(), {
      file,
      appDirName: name,
      fileExists: (relative) => {
        const target = path.resolve(appDir, relative);
        return target.startsWith(appDir + path.sep) && existsSync(target);
      },
    });
    if (result.ok) documents.push({ file, document: result.document });
    else problems.push(...result.problems);
  }
  return { documents, problems };
}
