/** The ledger: verification (the chains of every session, as `uhlp ledger verify` checks them), the sessions, and one session's exec and evidence entries. */
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { ActionButton, ErrorBox, JsonBlock, Loading, Section, useLoad } from '../components/common.js';
import { duration, time } from '../format.js';

interface Report {
  at: string;
  ok: boolean;
  durationMs: number;
  report: { sessions: number; files: number; entriesChecked: number; bytes: number; problemCount: number; warningCount: number; problems: unknown[]; warnings: unknown[]; gaps: unknown[]; torn: unknown[] };
}

interface SessionInfo {
  tier: string;
  id: string;
  app: string | null;
  ambient: boolean;
  startedAt: string | null;
  modifiedAt: string;
}

export function LedgerPage() {
  const status = useLoad(() => api<{ enabled: boolean; verifying: boolean; last?: Report }>('/ledger'), []);
  const [report, setReport] = useState<Report | undefined>(undefined);
  const [app, setApp] = useState('');
  const sessions = useLoad(() => api<{ sessions: SessionInfo[] }>(`/ledger/sessions${query({ app, limit: 100 })}`), [app]);
  const [open, setOpen] = useState<SessionInfo | undefined>(undefined);
  if (status.error !== undefined) return <ErrorBox error={status.error} />;
  if (status.data === undefined) return <Loading />;
  if (!status.data.enabled) return <Section title="Ledger"><p class="muted">This core keeps no turn ledger (UHLP_LEDGER=off).</p></Section>;
  const shown = report ?? status.data.last;
  return (
    <>
      <Section
        title="Verification"
        actions={
          <ActionButton
            label="Verify now"
            canAct
            run={async () => {
              setReport(await api<Report>('/ledger/verify', { method: 'POST', body: {} }));
            }}
          />
        }
      >
        {shown === undefined ? (
          <p class="muted">Not verified since this core started.</p>
        ) : (
          <div data-verified={shown.ok ? 'ok' : 'failed'}>
            <p class={shown.ok ? 'ok' : 'error'} role="status">
              {shown.ok ? 'Every chain verifies' : `${shown.report.problemCount} entries do not verify`} · {shown.report.sessions} sessions, {shown.report.entriesChecked} entries,{' '}
              {shown.report.files} files in {duration(shown.durationMs)} · {time(shown.at)}
            </p>
            {shown.report.problemCount > 0 ? <JsonBlock value={shown.report.problems} label="problems" /> : null}
            {shown.report.warningCount > 0 ? (
              <details>
                <summary>{shown.report.warningCount} warnings</summary>
                <JsonBlock value={shown.report.warnings} label="warnings" />
              </details>
            ) : null}
          </div>
        )}
      </Section>
      <Section title="Sessions">
        <label>
          App <input value={app} onChange={(event) => setApp(event.currentTarget.value.trim())} placeholder="any" />
        </label>
        <ErrorBox error={sessions.error} />
        <table>
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">App</th>
              <th scope="col">Plane</th>
              <th scope="col">Kind</th>
              <th scope="col">Last written</th>
            </tr>
          </thead>
          <tbody>
            {sessions.data?.sessions.map((session) => (
              <tr>
                <td>
                  <button type="button" class="button button-plain mono" onClick={() => setOpen(session)}>
                    {session.id}
                  </button>
                </td>
                <td>{session.app ?? ''}</td>
                <td>{session.tier}</td>
                <td>{session.ambient ? 'ambient' : 'stored'}</td>
                <td>{time(session.modifiedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      {open !== undefined ? <SessionEntries key={open.id} session={open} /> : null}
    </>
  );
}

function SessionEntries({ session }: { session: SessionInfo }) {
  const { data, error } = useLoad(() => api<{ exec: unknown[]; evidence: unknown[]; truncated: boolean }>(`/ledger/sessions/${encodeURIComponent(session.tier)}/${encodeURIComponent(session.id)}`), [session.id]);
  return (
    <Section title={`Session ${session.id}`}>
      <ErrorBox error={error} />
      {data === undefined && error === undefined ? <Loading /> : null}
      {data?.truncated ? <p class="muted">The newest entries are shown.</p> : null}
      {data !== undefined ? (
        <div class="two">
          <div>
            <h3>Exec ({data.exec.length})</h3>
            <JsonBlock value={data.exec} label="exec entries" />
          </div>
          <div>
            <h3>Evidence ({data.evidence.length})</h3>
            <JsonBlock value={data.evidence} label="evidence entries" />
          </div>
        </div>
      ) : null}
    </Section>
  );
}
