/**
 * The `llm` fixture (an app with LLM components on a `runner: llm` pool) in a
 * fresh directory, with a scripted answers file for UHLP_LLM_SCRIPT_FILE whose
 * one answer needs the whole conversation rendered as the fixture's templates
 * and a ticket request make it: system first, the prompt header, the prompt.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { copyFixture } from './uhlp-process.js';

/** What the model answers for ticket 42 from ada ("it crashes", lang=en, work order WO-7). */
export const TRIAGE_ANSWER = 'It is a bug.';
/** What it answers to anything else. */
export const DEFAULT_ANSWER = 'I do not know.';

export function llmFixture(): { dir: string; env: Record<string, string> } {
  const dir = copyFixture('llm');
  const script = path.join(dir, 'scripted-answers.yaml');
  const rendered = [
    'You triage support tickets\\. Be brief\\.',
    '\\[uhlp prompt header\\]',
    'session_id: "SES-[^"]+"',
    'turn_number: \\d+',
    'declared_inputs:',
    '  - name: "body"',
    '    hash: "sha256:[0-9a-f]{64}"',
    '[\\s\\S]*context_as_of: "[^"]+"',
    'work_order_id: "WO-7"',
    '\\[end of prompt header\\]',
    'Classify the ticket of app helpdesk, component triage, turn \\d+\\.',
    'Ticket 42 \\(en\\) from ada: IT CRASHES$',
  ].join('\\n');
  writeFileSync(script, JSON.stringify({ answers: [{ regex: rendered, answer: TRIAGE_ANSWER }], default: DEFAULT_ANSWER }));
  return { dir, env: { UHLP_LLM_SCRIPT_FILE: script } };
}

/** The request the scripted answer is for. */
export const TRIAGE_REQUEST: RequestInit = {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-user': 'ada', 'x-uhlp-work-order': 'WO-7' },
  body: JSON.stringify({ title: 'it crashes' }),
};
