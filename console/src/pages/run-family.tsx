/**
 * A run's family on its page: the run it was replayed or forked from and the
 * runs made from it, each a link; and the form that makes a new one, a replay
 * or a fork from a step whose checkpoint was kept (POST api/runs/<id>/replay
 * or /fork). A fork's edit is a JSON merge patch of the blackboard. The new
 * run's page opens once the core has made it.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ActionButton, ErrorBox } from '../components/common.js';
import { time } from '../format.js';
import { href, navigate } from '../router.js';
import type { RunDetail, RunFamilyLink, Step } from '../types.js';

export function Family({ parent, children }: { parent: RunFamilyLink | undefined; children: readonly RunFamilyLink[] }) {
  return (
    <>
      {parent !== undefined ? (
        <p class="family-parent">
          A {parent.kind} of <a href={href('runs', parent.runId)}>{parent.runId}</a> from step {parent.step}, by {parent.by} at {time(parent.at)}
        </p>
      ) : (
        <p class="muted">An original run (not replayed or forked from another).</p>
      )}
      {children.length > 0 ? (
        <table class="family-children">
          <caption>Replayed or forked from this run</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Kind</th>
              <th scope="col">From step</th>
              <th scope="col">By</th>
              <th scope="col">At</th>
            </tr>
          </thead>
          <tbody>
            {children.map((child) => (
              <tr>
                <td>
                  <a href={href('runs', child.runId)}>{child.runId}</a>
                </td>
                <td>{child.kind}</td>
                <td>{child.step}</td>
                <td>{child.by}</td>
                <td>{time(child.at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}

export function ReplayForm({ run, steps, canAct }: { run: RunDetail['run']; steps: readonly Step[]; canAct: boolean }) {
  const choices = run.checkpointedSteps;
  const [step, setStep] = useState<number | undefined>(undefined);
  const [patch, setPatch] = useState('{}');
  const [current, setCurrent] = useState(false);
  const [problem, setProblem] = useState<unknown>(undefined);
  if (choices.length === 0) return <p class="muted">No step of this run can be replayed (none has a checkpoint kept).</p>;
  const from = step ?? choices[choices.length - 1]!;
  const nodeOf = (index: number): string => steps.find((item) => item.index === index)?.node ?? '?';
  const start = async (kind: 'replay' | 'fork'): Promise<void> => {
    setProblem(undefined);
    const body: Record<string, unknown> = { fromStep: from, ...(current ? { currentRevision: true } : {}) };
    if (kind === 'fork') {
      try {
        body['set'] = JSON.parse(patch);
      } catch {
        setProblem(new Error('The blackboard edit is not JSON.'));
        return;
      }
    }
    const answer = await api<{ run: { id: string } }>(`/runs/${encodeURIComponent(run.id)}/${kind}`, { method: 'POST', body });
    navigate(href('runs', answer.run.id));
  };
  return (
    <form class="replay" onSubmit={(event) => event.preventDefault()}>
      <label>
        From step{' '}
        <select aria-label="from step" value={String(from)} onChange={(event) => setStep(Number((event.target as HTMLSelectElement).value))}>
          {choices.map((index) => (
            <option value={String(index)}>
              #{index} {nodeOf(index)}
            </option>
          ))}
        </select>
      </label>
      <label>
        <input type="checkbox" checked={current} onChange={(event) => setCurrent((event.target as HTMLInputElement).checked)} /> on the app's current revision
      </label>
      <ActionButton label="Replay from step" kind="plain" canAct={canAct} run={() => start('replay')} />
      <label>
        Blackboard edit (JSON merge patch)
        <textarea aria-label="blackboard edit" rows={3} value={patch} onInput={(event) => setPatch((event.target as HTMLTextAreaElement).value)} />
      </label>
      <ActionButton label="Fork from step" kind="plain" canAct={canAct} run={() => start('fork')} />
      <ErrorBox error={problem} />
    </form>
  );
}
