/**
 * Reads the `app.yaml` of every app directory of a materialized revision. A
 * broken file is reported and skipped; it never keeps the other apps from loading.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import type { AppDefinitionDocument } from './schema/app-definition-schema.js';
import type { MaterializedRevision } from './git/definitions-repo.js';
import { APP_FILE } from './protected-paths.js';
import { validateAppDefinition, type DefinitionProblem } from './validation/validate-app-definition.js';

export interface LoadedDefinition {
  /** `apps/<appId>/app.yaml`. */
  readonly file: string;
  readonly document: AppDefinitionDocument;
}

export interface LoadedDefinitions {
  readonly documents: readonly LoadedDefinition[];
  readonly problems: readonly DefinitionProblem[];
}

/** A file of the app directory as text; undefined when it leaves the directory or cannot be read. */
export function readInside(appDir: string, relative: string): string | undefined {
  const target = path.resolve(appDir, relative);
  if (!target.startsWith(appDir + path.sep)) return undefined;
  try {
    return readFileSync(target, 'utf8');
  } catch {
    return undefined;
  }
}

/** Whether an app's own MCP secrets hold a secret (and key): what its remote servers' secretRefs may name. */
export type AppSecrets = (appId: string, name: string, key?: string) => boolean;

export async function loadAppDefinitions(
  revision: Pick<MaterializedRevision, 'apps' | 'badNames'>,
  appSecrets?: AppSecrets,
  /** The operator's UHLP_LLM_ALLOW_PRIVATE, when the reader is the core. */
  llmAllowPrivate?: readonly string[],
): Promise<LoadedDefinitions> {
  const documents: LoadedDefinition[] = [];
  const problems: DefinitionProblem[] = revision.badNames.map((dir) => ({
    file: `${dir}/app.yaml`,
    path: '/',
    reason: `the directory name "${path.posix.basename(dir)}" is not an app id (lower-case letters, digits and "-", at most 63)`,
  }));
  for (const { name, dir: appDir } of revision.apps) {
    const file = `apps/${name}/${APP_FILE}`;
    const absolute = path.join(appDir, APP_FILE);
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
    const result = validateAppDefinition(parsed.toJS(), {
      file,
      appDirName: name,
      fileExists: (relative) => {
        const target = path.resolve(appDir, relative);
        return target.startsWith(appDir + path.sep) && existsSync(target);
      },
      readFile: (relative) => readInside(appDir, relative),
      ...(appSecrets !== undefined ? { hasSecret: (secret: string, key?: string) => appSecrets(name, secret, key) } : {}),
      ...(llmAllowPrivate !== undefined ? { llmAllowPrivate } : {}),
    });
    if (result.ok) documents.push({ file, document: result.document });
    else problems.push(...result.problems);
  }
  return { documents, problems };
}
