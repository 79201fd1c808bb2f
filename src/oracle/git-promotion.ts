/**
 * Promotions and reverts as commits of the definitions repository, made by the
 * core (never by a sandbox: app.yaml and generated/ are protected paths no MCP
 * call may write). A promotion adds `generated/<component>-<hash12>.js` and
 * switches the component in app.yaml to it (app-yaml-edit.ts), on HEAD (auto)
 * or on the branch `uhlp/optimize/<app>/<component>` (suggest: HEAD does not
 * move, nothing served changes). A revert is a new commit on HEAD that puts the
 * component back and deletes the file. Each commit's message carries its
 * evidence. Hot reload serves them like any other commit.
 *
 * A promotion is made only if the component's llm definition at HEAD is still
 * the one the candidate was judged against; HEAD moving between the read and
 * the commit is retried.
 */
import { Value } from '@sinclair/typebox/value';
import { parse } from 'yaml';
import { LlmComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { GitDefinitionStore, GitIdentity } from '../apps/git/definition-store.js';
import { APP_FILE } from '../apps/protected-paths.js';
import { UhlpError, isUhlpError } from '../shared/errors.js';
import { promoteInAppYaml, revertInAppYaml } from './app-yaml-edit.js';
import { readLlmDefinition } from './llm-definition.js';

/** The author of the oracle's commits. */
export const ORACLE_AUTHOR: GitIdentity = { name: 'uhlp optimization oracle', email: 'oracle@uhlp.invalid' };
/** Tries when HEAD moves under a commit. */
const COMMIT_ATTEMPTS = 3;

/** The branch a suggestion of `component` goes to. */
export function suggestionBranch(appId: string, componentId: string): string {
  return `uhlp/optimize/${appId}/${componentId}`;
}

/** The file a candidate is committed as. */
export function generatedScript(componentId: string, hash: string): string {
  return `generated/${componentId}-${hash.slice(0, 12)}.js`;
}

export interface PromotionInput {
  readonly appId: string;
  readonly componentId: string;
  /** The llm revision the candidate was judged against. */
  readonly revision: string;
  readonly script: string;
  readonly source: string;
  readonly codePool: string;
  readonly message: string;
  /** Commit to this branch instead of HEAD (suggest mode). */
  readonly branch?: string;
}

export interface RevertInput {
  readonly appId: string;
  readonly componentId: string;
  readonly script: string;
  readonly message: string;
}

/** Where promotions are written. */
export interface PromotionWriter {
  promote(input: PromotionInput): Promise<{ commit: string }>;
  revert(input: RevertInput): Promise<{ commit: string }>;
}

export class GitPromotions implements PromotionWriter {
  constructor(private readonly store: GitDefinitionStore) {}

  async promote(input: PromotionInput): Promise<{ commit: string }> {
    return this.retrying(async () => {
      const head = await this.store.head();
      const appYaml = (await this.store.readFile(input.appId, APP_FILE, head)).content;
      await this.checkRevision(input, appYaml, head);
      const promoted = promoteInAppYaml(appYaml, input.componentId, { script: input.script, codePool: input.codePool });
      const applied = await this.store.applyStateDiff({
        appId: input.appId,
        expectedBase: head,
        author: ORACLE_AUTHOR,
        message: input.message,
        changes: [
          { path: input.script, content: input.source },
          { path: APP_FILE, content: promoted },
        ],
        ...(input.branch !== undefined ? { branch: input.branch } : {}),
      });
      return { commit: applied.commit };
    });
  }

  async revert(input: RevertInput): Promise<{ commit: string }> {
    return this.retrying(async () => {
      const head = await this.store.head();
      const appYaml = (await this.store.readFile(input.appId, APP_FILE, head)).content;
      const reverted = revertInAppYaml(appYaml, input.componentId);
      const files = await this.store.listFiles(input.appId, head);
      const applied = await this.store.applyStateDiff({
        appId: input.appId,
        expectedBase: head,
        author: ORACLE_AUTHOR,
        message: input.message,
        changes: [{ path: APP_FILE, content: reverted }, ...(files.includes(input.script) ? [{ path: input.script, delete: true as const }] : [])],
      });
      return { commit: applied.commit };
    });
  }

  /** Refuses the promotion when the component's llm definition at `head` is not the one judged. */
  private async checkRevision(input: PromotionInput, appYaml: string, head: string): Promise<void> {
    const document = parse(appYaml) as { spec?: { components?: Array<{ id?: unknown; llm?: unknown }> } };
    const raw = document?.spec?.components?.find((component) => component?.id === input.componentId)?.llm;
    if (raw === undefined) throw new UhlpError('UHLP_ORACLE_PROMOTION_REFUSED', `app.yaml at ${head.slice(0, 12)} has no llm block for component "${input.componentId}"`);
    const llm = Value.Default(LlmComponentSpec, structuredClone(raw)) as LlmComponentSpec;
    const definition = await readLlmDefinition(llm, (file) =>
      this.store.readFile(input.appId, file, head).then(
        (read) => read.content,
        () => undefined,
      ),
    );
    if (definition.revision !== input.revision) {
      throw new UhlpError(
        'UHLP_ORACLE_PROMOTION_REFUSED',
        `the llm definition of "${input.componentId}" changed at ${head.slice(0, 12)} since the candidate was judged; it is judged again on new samples`,
      );
    }
  }

  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (error) {
        if (tries < COMMIT_ATTEMPTS && isUhlpError(error) && error.code === 'UHLP_DEFINITION_BASE_MISMATCH') continue;
        throw error;
      }
    }
  }
}
