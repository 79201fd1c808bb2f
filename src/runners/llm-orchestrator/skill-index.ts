/**
 * Skills of a workflow's agents (seed 004 §6). Eager skills are in every agent
 * prompt. Lazy skills are not, until an agent step's input is near enough to
 * their `trigger_intent`: the intents are embedded once per workflow and
 * revision (`core.llm.embed`), each agent step embeds its input, and the
 * skills whose cosine similarity reaches the workflow's `skill_threshold` are
 * loaded into that step's prompt. The contents are app files read through
 * MCP at the run's revision.
 */
import { cosineSimilarity } from '../../shared/local-embedding.js';
import type { ToolsClient } from '../kit/tools-client.js';
import type { SkillDefinition } from '../../contract/workflow/workflow-schema.js';
import type { DefinitionFiles } from './definition-files.js';

export const EMBED_TOOL = 'core.llm.embed';

/** Index entries kept at once (one per workflow and revision). */
const KEPT = 16;

export interface LoadedSkill {
  readonly id: string;
  readonly content: string;
  /** The similarity that loaded it; null for an eager skill. */
  readonly score: number | null;
}

export interface SkillSelection {
  readonly loaded: readonly LoadedSkill[];
  /** Every lazy skill's similarity to the step's input. */
  readonly scores: Readonly<Record<string, number>>;
  /** The embedding model that compared them (`uhlp-local-hash-256` offline). */
  readonly model: string | null;
}

interface Indexed {
  readonly model: string;
  readonly vectors: ReadonlyMap<string, readonly number[]>;
}

export interface SkillScope {
  readonly appId: string;
  readonly revision: string;
  readonly tools: ToolsClient;
}

export class SkillIndex {
  private readonly indexes = new Map<string, Promise<Indexed>>();

  constructor(private readonly files: DefinitionFiles) {}

  /** The skills of one agent step whose input is `query`. */
  async select(key: string, skills: readonly SkillDefinition[], query: string, threshold: number, scope: SkillScope): Promise<SkillSelection> {
    if (skills.length === 0) return { loaded: [], scores: {}, model: null };
    const lazy = skills.filter((skill) => skill.load_strategy === 'lazy');
    const chosen: Array<{ skill: SkillDefinition; score: number | null }> = skills.filter((skill) => skill.load_strategy !== 'lazy').map((skill) => ({ skill, score: null }));
    const scores: Record<string, number> = {};
    let model: string | null = null;
    if (lazy.length > 0 && query.trim() !== '') {
      const index = await this.index(`${scope.appId}\0${scope.revision}\0${key}`, lazy, scope.tools);
      model = index.model;
      const asked = await scope.tools.call(EMBED_TOOL, { texts: [query.slice(0, 8000)] });
      const vector = (asked['vectors'] as number[][] | undefined)?.[0] ?? [];
      for (const skill of lazy) {
        const score = Math.round(cosineSimilarity(vector, index.vectors.get(skill.id) ?? []) * 1000) / 1000;
        scores[skill.id] = score;
        if (score >= threshold) chosen.push({ skill, score });
      }
    }
    const loaded = await Promise.all(
      chosen.map(async ({ skill, score }) => ({ id: skill.id, content: await this.files.read(scope.appId, scope.revision, skill.content, scope.tools), score })),
    );
    return { loaded, scores, model };
  }

  private index(key: string, lazy: readonly SkillDefinition[], tools: ToolsClient): Promise<Indexed> {
    let index = this.indexes.get(key);
    if (index === undefined) {
      index = tools.call(EMBED_TOOL, { texts: lazy.map((skill) => skill.trigger_intent ?? skill.id) }).then((answer) => {
        const vectors = (answer['vectors'] as number[][] | undefined) ?? [];
        return { model: String(answer['model'] ?? ''), vectors: new Map(lazy.map((skill, i) => [skill.id, vectors[i] ?? []])) };
      });
      this.indexes.set(key, index);
      // An index that failed is made again next time.
      index.catch(() => this.indexes.delete(key));
      for (const old of this.indexes.keys()) {
        if (this.indexes.size <= KEPT) break;
        this.indexes.delete(old);
      }
    }
    return index;
  }
}

/** The text an agent step is found by: the strings of its inputs, in order. */
export function queryText(value: unknown, limit = 8000): string {
  const parts: string[] = [];
  let length = 0;
  const walk = (item: unknown): void => {
    if (length >= limit) return;
    if (typeof item === 'string') {
      parts.push(item);
      length += item.length;
    } else if (typeof item === 'number' || typeof item === 'boolean') parts.push(String(item));
    else if (Array.isArray(item)) item.forEach(walk);
    else if (typeof item === 'object' && item !== null) Object.values(item).forEach(walk);
  };
  walk(value);
  return parts.join('\n').slice(0, limit);
}
