/**
 * Definition state tools: read a file of the app at the execution's revision,
 * and apply changes to it as one commit of the definitions repository.
 */
import { readFile } from 'node:fs/promises';
import { Type } from '@sinclair/typebox';
import { normalizeAppPath } from '../../apps/definition-paths.js';
import { appRevisionFile } from '../../apps/revision-paths.js';
import { decodeUtf8 } from '../../shared/utf8-text.js';
import { UhlpError } from '../../shared/errors.js';
import { checkStateWrite, requireCapability } from '../capability-guard.js';
import { defineTool } from '../tool-definition.js';

export const getDefinitionFileContent = defineTool({
  name: 'core.state.getDefinitionFileContent',
  description: "Reads a file of this app's definition directory, at the revision the execution runs at.",
  inputSchema: Type.Object(
    { path: Type.String({ minLength: 1, maxLength: 1024, description: 'Path relative to the app directory, e.g. prompts/answer.njk.' }) },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    // The same refusals as the Git definition store (UHLP_DEFINITION_PATH_REFUSED), then the app directory's bounds.
    const file = appRevisionFile(services.revisionsRoot, grant.appId, grant.revision, normalizeAppPath(args.path));
    if (file === undefined) {
      throw new UhlpError('UHLP_DEFINITION_PATH_REFUSED', `path "${args.path}" leaves the app directory`, { field: 'path' });
    }
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') {
        throw new UhlpError('UHLP_DEFINITION_FILE_NOT_FOUND', `no file "${args.path}" in app ${grant.appId} at ${grant.revision.slice(0, 12)}`, {
          path: args.path,
          revision: grant.revision,
        });
      }
      throw error;
    }
    const text = decodeUtf8(bytes);
    return {
      content: text !== undefined
        ? { content: text, encoding: 'utf8', revision: grant.revision }
        : { content: bytes.toString('base64'), encoding: 'base64', revision: grant.revision },
    };
  },
});

export const applyStateDiff = defineTool({
  name: 'core.state.applyStateDiff',
  description:
    "Applies changes to this app's definition files as one commit of the definitions repository, made against the execution's revision; refused when that revision is no longer HEAD. Only the paths the app's state capability lets it write; never app.yaml.",
  capability: 'state',
  inputSchema: Type.Object(
    {
      message: Type.String({ minLength: 1, maxLength: 4096, description: 'Commit message.' }),
      diff: Type.Optional(Type.String({ minLength: 1, description: 'Unified diff, paths relative to the app directory.' })),
      changes: Type.Optional(
        Type.Array(
          Type.Object(
            {
              path: Type.String({ minLength: 1, maxLength: 1024, description: 'Path relative to the app directory.' }),
              content: Type.Optional(Type.String({ description: 'New content (UTF-8); omit with delete.' })),
              delete: Type.Optional(Type.Boolean({ description: 'Delete the file.' })),
            },
            { additionalProperties: false },
          ),
          { minItems: 1, maxItems: 256 },
        ),
      ),
      expectedBase: Type.Optional(Type.String({ minLength: 7, maxLength: 64, description: "The commit the change is made against; the execution's revision when omitted." })),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services }) {
    const store = services.definitionStore;
    if (!store) {
      throw new UhlpError('UHLP_STATE_WRITE_NOT_AVAILABLE', 'core.state.applyStateDiff needs apps from a definitions repository; this core serves apps from Kubernetes', {
        app: grant.appId,
      });
    }
    if ((args.diff === undefined) === (args.changes === undefined)) {
      throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', 'give exactly one of diff and changes', { field: 'diff' });
    }
    const changes = args.changes?.map((change) => {
      if (change.delete === true) return { path: change.path, delete: true as const };
      if (change.content === undefined) throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `change of "${change.path}" needs content or delete`, { field: 'changes' });
      return { path: change.path, content: change.content };
    });
    const state = requireCapability(grant.capabilities, 'state');
    const applied = await store.applyStateDiff({
      appId: grant.appId,
      authorize: (appPath) => checkStateWrite(state, appPath),
      expectedBase: args.expectedBase ?? grant.revision,
      author: { name: `uhlp app ${grant.appId}`, email: `${grant.appId}@apps.uhlp.invalid` },
      message: args.message,
      ...(changes ? { changes } : { unifiedDiff: args.diff! }),
    });
    return { content: { commit: applied.commit, previous: applied.previous, committed: applied.committed, changedPaths: applied.changedPaths } };
  },
});
