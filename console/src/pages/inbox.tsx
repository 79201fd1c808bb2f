/**
 * The approvals inbox: every run paused at an approval node, its prompt, what
 * it is about (the run's input and its blackboard, as excerpts), the tools
 * approving it grants, and the decision (approve or reject, with a comment). The decision is the principal's: the core records who made it and
 * drives the run on; the answer comes once the run paused again or ended.
 */
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { ActionButton, ErrorBox, Loading, Section, useLoad } from '../components/common.js';
import { time } from '../format.js';
import { href } from '../router.js';
import type { JsonExcerpt, RunDetail, RunPage } from '../types.js';

export function InboxPage({ canAct }: { canAct: boolean }) {
  const { data, error, reload } = useLoad(() => api<RunPage>(`/runs${query({ status: 'paused', limit: 50 })}`), [], 5000);
  // A decided run leaves the list: what became of it stays said here.
  const [decided, setDecided] = useState<string[]>([]);
  const done = (outcome: string): void => {
    setDecided((lines) => [...lines.slice(-9), outcome]);
    reload();
  };
  return (
    <Section title="Approvals inbox" actions={<span class="muted">{data !== undefined ? `${data.total ?? data.runs.length} waiting` : ''}</span>}>
      <ErrorBox error={error} />
      <ul class="decided" role="status" aria-live="polite">
        {decided.map((line) => (
          <li class="ok">{line}</li>
        ))}
      </ul>
      {data === undefined ? <Loading /> : null}
      {data !== undefined && data.runs.length === 0 ? <p class="muted">Nothing waits for a decision.</p> : null}
      <ul class="inbox">
        {data?.runs.map((run) => (
          <InboxItem key={run.id} runId={run.id} canAct={canAct} onDone={done} />
        ))}
      </ul>
    </Section>
  );
}

function InboxItem({ runId, canAct, onDone }: { runId: string; canAct: boolean; onDone: (outcome: string) => void }) {
  const { data, error } = useLoad(() => api<RunDetail>(`/runs/${encodeURIComponent(runId)}`), [runId]);
  if (error !== undefined) return <li class="inbox-item"><ErrorBox error={error} /></li>;
  if (data === undefined) return <li class="inbox-item"><Loading /></li>;
  const { run, grants, approval } = data;
  return (
    <li class="inbox-item" data-run={run.id}>
      <h3>
        <a href={href('runs', run.id)}>{run.id}</a>
      </h3>
      <p class="muted">
        {run.app} / {run.component} · waiting at {run.paused?.node ?? '?'} since {time(run.paused?.since)}
      </p>
      <p class="prompt">{run.paused?.prompt ?? ''}</p>
      {approval !== undefined ? (
        <div class="approval-context">
          <Excerpt title="Input" excerpt={approval.input} runId={run.id} />
          <Excerpt title="Blackboard" excerpt={approval.blackboard} runId={run.id} />
        </div>
      ) : null}
      <Decision runId={run.id} grants={grants} canAct={canAct} onDone={onDone} />
    </li>
  );
}

/** A bounded piece of the run's JSON, as text. */
function Excerpt({ title, excerpt, runId }: { title: string; excerpt: JsonExcerpt; runId: string }) {
  return (
    <div class="excerpt">
      <h4>
        {title}
        {excerpt.truncated ? <span class="muted"> (first {excerpt.text.length} of {excerpt.chars} characters)</span> : null}
      </h4>
      <pre class="json" aria-label={`${title.toLowerCase()} of ${runId}`} tabIndex={0}>
        {excerpt.text}
      </pre>
    </div>
  );
}

export function Decision({ runId, grants, canAct, onDone }: { runId: string; grants: readonly string[]; canAct: boolean; onDone: (outcome: string) => void }) {
  const [comment, setComment] = useState('');
  const decide = async (approved: boolean): Promise<void> => {
    const answer = await api<{ status: number; body: unknown }>(`/runs/${encodeURIComponent(runId)}/resume`, { method: 'POST', body: { approved, ...(comment !== '' ? { comment } : {}) } });
    onDone(`${approved ? 'Approved' : 'Rejected'} ${runId}: the run answered ${answer.status}`);
  };
  const id = `comment-${runId}`;
  return (
    <div class="decision">
      <p>
        Approving grants:{' '}
        {grants.length === 0 ? (
          <span class="muted">no tools</span>
        ) : (
          grants.map((tool) => (
            <code class="grant" key={tool}>
              {tool}
            </code>
          ))
        )}
      </p>
      <label for={id}>Comment</label>
      <input id={id} value={comment} onInput={(event) => setComment(event.currentTarget.value)} maxLength={4096} />
      <ActionButton label="Approve" canAct={canAct} run={() => decide(true)} />
      <ActionButton label="Reject" kind="danger" canAct={canAct} run={() => decide(false)} />
    </div>
  );
}
