/**
 * The optimizer board: every optimized component by stage (sampling ->
 * generating -> shadow -> canary -> full, or suggested, rolled back,
 * rejected, failed, refused), its live agreement and the tokens its code saved;
 * one component's candidates with their code and the diff from the one before,
 * and the operator's promote, reject and roll back.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ActionButton, ErrorBox, JsonBlock, Loading, Section, StatusBadge, useLoad } from '../components/common.js';
import { LineDiff } from '../components/line-diff.js';
import { percent, time } from '../format.js';

interface Candidate {
  hash: string;
  script?: string;
  verdict?: string;
  agreement?: number;
  coverage?: number;
  at?: string;
  source?: string;
  attempt?: number;
  model?: string;
  [key: string]: unknown;
}

interface ComponentStatus {
  app: string;
  component: string;
  mode: string;
  handler: string;
  stage: string;
  reason?: string;
  samples?: { seen: number; stored: number; repeats: number; unstable: number; perMinute: number; stable: boolean };
  candidate?: { hash: string; script: string; agreement: number; coverage: number; model: string; tokensPerAnswer: number };
  promotion?: { commit: string; branch?: string; at: string };
  rollback?: { commit?: string; reason: string; at: string };
  live: { compared: number; agreements: number; disagreements: number; declines: number; agreement: number | null };
  totals: { samples: number; hits: number; tokensSaved: number };
  codegen: { attempts: number; tokens: number };
  candidates: Candidate[];
}

const COLUMNS: Array<{ title: string; stages: string[] }> = [
  { title: 'Sampling', stages: ['sampling', 'generating'] },
  { title: 'Candidate', stages: ['suggested'] },
  { title: 'Shadow', stages: ['shadow'] },
  { title: 'Canary', stages: ['canary'] },
  { title: 'Full', stages: ['full'] },
  { title: 'Stopped', stages: ['rolled-back', 'rejected', 'failed', 'refused'] },
];

export function OraclePage({ canAct }: { canAct: boolean }) {
  const { data, error, reload } = useLoad(() => api<{ enabled: boolean; components: ComponentStatus[] }>('/oracle'), [], 5000);
  const [open, setOpen] = useState<{ app: string; component: string } | undefined>(undefined);
  if (error !== undefined) return <ErrorBox error={error} />;
  if (data === undefined) return <Loading />;
  if (!data.enabled) return <Section title="Optimizer"><p class="muted">The optimization oracle is off on this core (UHLP_ORACLE=off).</p></Section>;
  return (
    <>
      <Section title="Optimizer">
        {data.components.length === 0 ? <p class="muted">No component opts in (llm.optimize).</p> : null}
        <div class="board">
          {COLUMNS.map((column) => (
            <section class="column" aria-label={column.title}>
              <h3>{column.title}</h3>
              {data.components
                .filter((status) => column.stages.includes(status.stage))
                .map((status) => (
                  <button
                    type="button"
                    class="tile"
                    data-component={`${status.app}/${status.component}`}
                    aria-pressed={open?.app === status.app && open.component === status.component}
                    onClick={() => setOpen({ app: status.app, component: status.component })}
                  >
                    <strong>
                      {status.app}/{status.component}
                    </strong>
                    <StatusBadge status={status.stage} />
                    <span>agreement {percent(status.live.agreement)}</span>
                    <span>{status.totals.tokensSaved} tokens saved</span>
                  </button>
                ))}
            </section>
          ))}
        </div>
      </Section>
      {open !== undefined ? <ComponentDetail key={`${open.app}/${open.component}`} app={open.app} component={open.component} canAct={canAct} onChange={reload} /> : null}
    </>
  );
}

function ComponentDetail({ app, component, canAct, onChange }: { app: string; component: string; canAct: boolean; onChange: () => void }) {
  const path = `/oracle/${encodeURIComponent(app)}/${encodeURIComponent(component)}`;
  const { data, error, reload } = useLoad(() => api<ComponentStatus>(path), [path], 5000);
  const [outcome, setOutcome] = useState<string | undefined>(undefined);
  if (error !== undefined) return <ErrorBox error={error} />;
  if (data === undefined) return <Loading />;
  const command = (name: 'promote' | 'reject' | 'rollback') => async (): Promise<void> => {
    const status = await api<ComponentStatus>(`${path}/${name}`, { method: 'POST', body: {} });
    setOutcome(`${name}: now ${status.stage}`);
    reload();
    onChange();
  };
  const current = data.candidates.find((candidate) => candidate.hash === data.candidate?.hash) ?? data.candidates[0];
  const previous = current !== undefined ? data.candidates[data.candidates.indexOf(current) + 1] : undefined;
  return (
    <Section
      title={`${app}/${component}`}
      actions={
        <span class="actions">
          <ActionButton label="Promote" canAct={canAct} run={command('promote')} />
          <ActionButton label="Reject" kind="danger" canAct={canAct} run={command('reject')} />
          <ActionButton label="Roll back" kind="danger" canAct={canAct} run={command('rollback')} />
        </span>
      }
    >
      {outcome !== undefined ? (
        <p role="status" class="ok">
          {outcome}
        </p>
      ) : null}
      <dl class="facts">
        <dt>Stage</dt>
        <dd>
          <StatusBadge status={data.stage} />
        </dd>
        <dt>Mode</dt>
        <dd>{data.mode}</dd>
        <dt>Handler</dt>
        <dd>{data.handler}</dd>
        {data.reason !== undefined ? (
          <>
            <dt>Why</dt>
            <dd>{data.reason}</dd>
          </>
        ) : null}
        <dt>Live agreement</dt>
        <dd>
          {percent(data.live.agreement)} of {data.live.compared} compared ({data.live.disagreements} disagreed, {data.live.declines} declined)
        </dd>
        <dt>Tokens saved</dt>
        <dd>{data.totals.tokensSaved}</dd>
        <dt>Samples</dt>
        <dd>{data.samples !== undefined ? `${data.samples.stored} held of ${data.samples.seen} seen, ${data.samples.stable ? 'stable' : 'not stable yet'}` : '–'}</dd>
        <dt>Code generation</dt>
        <dd>
          {data.codegen.attempts} attempts, {data.codegen.tokens} tokens
        </dd>
        {data.promotion !== undefined ? (
          <>
            <dt>Promoted</dt>
            <dd class="mono">
              {data.promotion.commit.slice(0, 12)} {data.promotion.branch ?? ''} {time(data.promotion.at)}
            </dd>
          </>
        ) : null}
        {data.rollback !== undefined ? (
          <>
            <dt>Rolled back</dt>
            <dd>
              {data.rollback.reason} {time(data.rollback.at)}
            </dd>
          </>
        ) : null}
      </dl>
      {current?.source !== undefined ? (
        <>
          <h3>
            Candidate {current.hash.slice(0, 12)} <span class="muted">{current.script ?? ''}</span>
          </h3>
          <pre class="code" aria-label="candidate code" tabIndex={0}>
            {current.source}
          </pre>
          <h3>Diff from {previous?.source !== undefined ? `candidate ${previous.hash.slice(0, 12)}` : 'nothing (the first candidate)'}</h3>
          <LineDiff before={previous?.source ?? ''} after={current.source} label="candidate diff" />
        </>
      ) : (
        <p class="muted">No candidate yet.</p>
      )}
      <details>
        <summary>All candidates ({data.candidates.length})</summary>
        <JsonBlock value={data.candidates.map(({ source: _source, ...rest }) => rest)} label="candidates" />
      </details>
    </Section>
  );
}
