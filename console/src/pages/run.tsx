/**
 * One run: its state and provenance, the timeline of its steps as a waterfall
 * (parallel branches overlap, retries show as repeated nodes), each step's
 * thought, action, observation and snapshot, and, while it runs, live updates
 * from the run's stream. A paused run can be decided here as in the inbox, and
 * a run that has not ended can be cancelled (its step in flight is cut).
 * Any run can be replayed or forked from a step whose checkpoint was kept (a
 * new run; this one stays as it is), and its family (the run it came from, the
 * runs made from it) links to each of them.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, streamEvents } from '../api.js';
import { ActionButton, ErrorBox, JsonBlock, Loading, Section, StatusBadge } from '../components/common.js';
import { duration, time } from '../format.js';
import type { RunDetail, Step } from '../types.js';
import { Decision } from './inbox.js';
import { Family, ReplayForm } from './run-family.js';

export function RunPage({ id, canAct }: { id: string; canAct: boolean }) {
  const [detail, setDetail] = useState<RunDetail | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [live, setLive] = useState<'connecting' | 'live' | 'ended'>('connecting');
  const [tick, setTick] = useState(0);

  useEffect(() => {
    const abort = new AbortController();
    let ended = false;
    api<RunDetail>(`/runs/${encodeURIComponent(id)}`, { signal: abort.signal }).then(setDetail, (failure: unknown) => !abort.signal.aborted && setError(failure));
    const follow = async (): Promise<void> => {
      while (!abort.signal.aborted && !ended) {
        try {
          setLive('live');
          await streamEvents(
            `/runs/${encodeURIComponent(id)}/events`,
            (event, data) => {
              if (event === 'run') setDetail(data as RunDetail);
              if (event === 'end' && (data as { reason?: string }).reason !== 'reconnect') ended = true;
            },
            abort.signal,
          );
        } catch {
          if (abort.signal.aborted) return;
          await new Promise((resolve) => setTimeout(resolve, 2000));
        }
      }
      setLive('ended');
    };
    void follow();
    return () => abort.abort();
  }, [id, tick]);

  if (error !== undefined) return <ErrorBox error={error} />;
  if (detail === undefined) return <Loading />;
  const { run, trace, grants } = detail;
  return (
    <>
      <Section
        title={`Run ${run.id}`}
        actions={
          <span class="muted" role="status" aria-live="polite" data-live={live}>
            {live === 'live' ? 'live' : live === 'ended' ? 'ended' : 'connecting'}
          </span>
        }
      >
        <dl class="facts">
          <dt>State</dt>
          <dd>
            <StatusBadge status={run.status} />
          </dd>
          <dt>App</dt>
          <dd>{run.app}</dd>
          <dt>Component</dt>
          <dd>{run.component}</dd>
          <dt>Workflow</dt>
          <dd>{run.workflowId}</dd>
          <dt>Revision</dt>
          <dd class="mono">{run.revision}</dd>
          <dt>Started</dt>
          <dd>{time(run.createdAt)}</dd>
          <dt>Updated</dt>
          <dd>{time(run.updatedAt)}</dd>
          <dt>Attempts</dt>
          <dd>{run.attempts}</dd>
        </dl>
        {run.cancellation !== undefined ? (
          <p class="cancellation">
            Cancelled by <strong>{run.cancellation.by}</strong> ({run.cancellation.via}) at {time(run.cancellation.at)}
          </p>
        ) : null}
        {run.error !== undefined ? (
          <p class="error">
            {run.error.code}: {run.error.message}
          </p>
        ) : null}
        {(run.status === 'running' || run.status === 'paused') && run.cancellation === undefined ? (
          <ActionButton
            label="Cancel run"
            kind="danger"
            canAct={canAct}
            confirm={`Cancel run ${run.id}? Its step in flight is cut; the workflow's on_cancel node runs if it has one.`}
            run={async () => {
              const answer = await api<{ run: RunDetail['run'] }>(`/runs/${encodeURIComponent(run.id)}/cancel`, { method: 'POST', body: {} });
              setDetail((current) => (current === undefined ? current : { ...current, run: answer.run }));
              setTick((value) => value + 1);
            }}
          />
        ) : null}
        {run.paused !== undefined ? (
          <div class="paused">
            <h3>Waiting for approval at {run.paused.node}</h3>
            <p class="prompt">{run.paused.prompt}</p>
            <Decision runId={run.id} grants={grants} canAct={canAct} onDone={() => setTick((value) => value + 1)} />
          </div>
        ) : null}
      </Section>
      <Section title="Family">
        <Family parent={run.parent} children={run.children} />
        <ReplayForm run={run} steps={trace.steps} canAct={canAct} />
      </Section>
      <Section title="Provenance">
        <Provenance metadata={run.metadata} approvals={run.approvals} />
      </Section>
      <Section title={`Timeline (${trace.steps.length + trace.droppedSteps} steps)`}>
        {trace.droppedSteps > 0 ? <p class="muted">{trace.droppedSteps} earlier steps were dropped to keep the record bounded.</p> : null}
        <Waterfall steps={trace.steps} start={Date.parse(run.createdAt)} />
        <ol class="steps">
          {trace.steps.map((step) => (
            <StepItem key={step.index} step={step} />
          ))}
        </ol>
      </Section>
      {run.status === 'completed' || (run.status === 'cancelled' && run.result !== undefined) ? (
        <Section title="Result">
          <JsonBlock value={run.result} label="result" />
        </Section>
      ) : null}
    </>
  );
}

function Provenance({ metadata, approvals }: { metadata: Record<string, unknown> | null; approvals: RunDetail['run']['approvals'] }) {
  const entries = Object.entries(approvals);
  return (
    <>
      {metadata === null ? (
        <p class="muted">The workflow declares no provenance.</p>
      ) : (
        <dl class="facts">
          {Object.entries(metadata).map(([key, value]) => (
            <>
              <dt>{key.replaceAll('_', ' ')}</dt>
              <dd>{typeof value === 'string' ? value : JSON.stringify(value)}</dd>
            </>
          ))}
        </dl>
      )}
      {entries.length > 0 ? (
        <table>
          <caption>Approvals</caption>
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Decision</th>
              <th scope="col">By</th>
              <th scope="col">At</th>
              <th scope="col">Comment</th>
            </tr>
          </thead>
          <tbody>
            {entries.map(([node, approval]) => (
              <tr>
                <td>{node}</td>
                <td>{approval.approved ? 'approved' : 'rejected'}</td>
                <td>{approval.by ?? ''}</td>
                <td>{time(approval.at)}</td>
                <td>{approval.comment ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}

/** Bars from each step's start (its end less its duration) to its end, on the run's time axis. */
function Waterfall({ steps, start }: { steps: Step[]; start: number }) {
  const bars = useRef<HTMLDivElement>(null);
  const spans = steps.map((step) => {
    const end = Date.parse(step.at);
    return { step, from: end - step.durationMs, to: end };
  });
  const origin = Math.min(start, ...spans.map((span) => span.from));
  const total = Math.max(1, ...spans.map((span) => span.to - origin));
  // Positions through the CSSOM: the page's policy allows no inline style attribute.
  useEffect(() => {
    const rows = bars.current?.querySelectorAll<HTMLElement>('.bar');
    rows?.forEach((bar, i) => {
      const span = spans[i];
      if (span === undefined) return;
      bar.style.marginLeft = `${((span.from - origin) / total) * 100}%`;
      bar.style.width = `${Math.max(0.5, ((span.to - span.from) / total) * 100)}%`;
    });
  });
  if (steps.length === 0) return <p class="muted">No step has run yet.</p>;
  return (
    <div class="waterfall" ref={bars} role="list" aria-label="step timeline">
      {spans.map(({ step }) => (
        <div class="lane" role="listitem">
          <span class="lane-label">
            {step.index}. {step.node}
          </span>
          <span class="lane-track">
            <span class={`bar bar-${step.status}`} title={`${step.node}: ${duration(step.durationMs)}`} />
          </span>
          <span class="lane-time">{duration(step.durationMs)}</span>
        </div>
      ))}
    </div>
  );
}

function StepItem({ step }: { step: Step }) {
  return (
    <li class="step">
      <details>
        <summary>
          <span class="mono">#{step.index}</span> {step.node} <span class="muted">({step.type})</span> <StatusBadge status={step.status} /> <span class="muted">{duration(step.durationMs)}</span>
          {step.takenFrom !== undefined ? (
            <span class="muted taken-from" data-taken-from={step.takenFrom.runId}>
              {' '}
              taken from {step.takenFrom.runId}
            </span>
          ) : null}
        </summary>
        <h4>Thought</h4>
        <p class="thought">{step.thought}</p>
        <h4>Action</h4>
        <JsonBlock value={step.action} label={`step ${step.index} action`} />
        <h4>Observation</h4>
        <JsonBlock value={step.observation} label={`step ${step.index} observation`} />
        {step.output !== undefined ? (
          <>
            <h4>Output</h4>
            <JsonBlock value={step.output} label={`step ${step.index} output`} />
          </>
        ) : null}
        {step.error !== undefined ? (
          <p class="error">
            {step.error.code}: {step.error.message}
          </p>
        ) : null}
        <h4>Snapshot</h4>
        <JsonBlock value={step.snapshot} label={`step ${step.index} snapshot`} />
      </details>
    </li>
  );
}
