/**
 * The queues: depth, oldest age and dead letters of every delivery route; a queue's dead letters with their reasons
 * and last errors, and redrive; and the events waiting at flow-control gates (docs/flow-control.md), per key.
 */
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { ActionButton, ErrorBox, JsonBlock, Loading, Section, useLoad } from '../components/common.js';
import { duration, time } from '../format.js';

interface Queue {
  app: string;
  source: string;
  name: string;
  component: string;
  depth: number;
  pending: number;
  retrying: number;
  deadLetters: number;
  oldestAgeMs: number;
}

/** A flow-control key with events waiting: its gate (route or component, concurrency or throttle), waiting and running. */
interface WaitingGate {
  app: string;
  scope: string;
  kind: string;
  key: string;
  waiting: number;
  running: number;
}

interface DeadLetter {
  id: string;
  invocationId: string;
  payload: unknown;
  attempts: number;
  reason: string;
  error?: string;
  /** The last error's message, and where its script threw (a script exception). */
  errorMessage?: string;
  errorStack?: string;
  deadAt: number;
}

export function QueuesPage({ canAct }: { canAct: boolean }) {
  const { data, error, reload } = useLoad(() => api<{ queues: Queue[] }>('/queues'), [], 5000);
  const [open, setOpen] = useState<string | undefined>(undefined);
  if (error !== undefined) return <ErrorBox error={error} />;
  if (data === undefined) return <Loading />;
  return (
    <Section title="Queues">
      {data.queues.length === 0 ? <p class="muted">No app has a queue, cron, callback or trigger route.</p> : null}
      <table>
        <thead>
          <tr>
            <th scope="col">App</th>
            <th scope="col">Source</th>
            <th scope="col">Name</th>
            <th scope="col">Component</th>
            <th scope="col">Depth</th>
            <th scope="col">Retrying</th>
            <th scope="col">Oldest</th>
            <th scope="col">Dead letters</th>
          </tr>
        </thead>
        <tbody>
          {data.queues.map((queue) => {
            const key = `${queue.source}/${queue.app}/${queue.name}`;
            return (
              <tr data-queue={key}>
                <td>{queue.app}</td>
                <td>{queue.source}</td>
                <td>{queue.name}</td>
                <td>{queue.component}</td>
                <td>{queue.depth}</td>
                <td>{queue.retrying}</td>
                <td>{queue.oldestAgeMs > 0 ? duration(queue.oldestAgeMs) : '–'}</td>
                <td>
                  {queue.deadLetters}{' '}
                  {queue.deadLetters > 0 ? (
                    <button type="button" class="button button-plain" aria-expanded={open === key} onClick={() => setOpen(open === key ? undefined : key)}>
                      {open === key ? 'Hide' : 'Show'} dead letters of {queue.name}
                    </button>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {open !== undefined ? <DeadLetters address={open} canAct={canAct} onChange={reload} /> : null}
      <WaitingGates />
    </Section>
  );
}

function WaitingGates() {
  const { data, error } = useLoad(() => api<{ gates: WaitingGate[] }>('/queues/waiting'), [], 2000);
  return (
    <div class="waiting-gates">
      <h3>Waiting at flow gates</h3>
      <ErrorBox error={error} />
      {data?.gates.length === 0 ? <p class="muted">No event waits at a concurrency or throttle key.</p> : null}
      {data !== undefined && data.gates.length > 0 ? (
        <table aria-label="Events waiting at flow gates">
          <thead>
            <tr>
              <th scope="col">App</th>
              <th scope="col">Route or component</th>
              <th scope="col">Gate</th>
              <th scope="col">Key</th>
              <th scope="col">Waiting</th>
              <th scope="col">Running</th>
            </tr>
          </thead>
          <tbody>
            {data.gates.map((gate) => (
              <tr data-gate={`${gate.app}|${gate.scope}|${gate.kind}|${gate.key}`}>
                <td>{gate.app}</td>
                <td>{gate.scope}</td>
                <td>{gate.kind}</td>
                <td>{gate.key === '' ? <span class="muted">(none)</span> : gate.key}</td>
                <td>{gate.waiting}</td>
                <td>{gate.running}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function DeadLetters({ address, canAct, onChange }: { address: string; canAct: boolean; onChange: () => void }) {
  const path = `/queues/${address.split('/').map(encodeURIComponent).join('/')}`;
  const { data, error, reload } = useLoad(() => api<{ deadLetters: DeadLetter[] }>(`${path}/dead${query({ limit: 100 })}`), [address]);
  const [outcome, setOutcome] = useState<string | undefined>(undefined);
  return (
    <div class="dead-letters">
      <div class="card-head">
        <h3>Dead letters of {address}</h3>
        <ActionButton
          label="Redrive all"
          canAct={canAct}
          run={async () => {
            const answer = await api<{ redriven: number }>(`${path}/redrive`, { method: 'POST', body: {} });
            setOutcome(`${answer.redriven} redriven`);
            reload();
            onChange();
          }}
        />
      </div>
      {outcome !== undefined ? (
        <p role="status" class="ok">
          {outcome}
        </p>
      ) : null}
      <ErrorBox error={error} />
      {data?.deadLetters.length === 0 ? <p class="muted">None left.</p> : null}
      <ol>
        {data?.deadLetters.map((letter) => (
          <li class="dead-letter">
            <p>
              <span class="badge badge-failed">{letter.reason}</span> {letter.error ?? ''} · {letter.attempts} attempts · dead since {time(new Date(letter.deadAt).toISOString())}
            </p>
            {letter.errorMessage !== undefined ? <p class="error">{letter.errorMessage}</p> : null}
            {letter.errorStack !== undefined ? <pre class="error">{letter.errorStack}</pre> : null}
            <JsonBlock value={letter.payload} label={`payload of ${letter.invocationId}`} />
          </li>
        ))}
      </ol>
    </div>
  );
}
