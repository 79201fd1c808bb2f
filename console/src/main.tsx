/**
 * The console's page: the session (who is signed in, as what), the navigation,
 * and the page the hash names. Beyond loopback, without a token, it asks for
 * one (the core sets a cookie only its own routes get).
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { ErrorBox, Loading } from './components/common.js';
import { AppsPage } from './pages/apps.js';
import { InboxPage } from './pages/inbox.js';
import { LedgerPage } from './pages/ledger.js';
import { OraclePage } from './pages/oracle.js';
import { PoolsPage } from './pages/pools.js';
import { QueuesPage } from './pages/queues.js';
import { RequestPage } from './pages/request.js';
import { RequestsPage } from './pages/requests.js';
import { RunPage } from './pages/run.js';
import { RunsPage } from './pages/runs.js';
import { href, useRoute, type Route } from './router.js';
import type { Session } from './types.js';
import './styles.css';

const PAGES: Array<{ page: string; title: string }> = [
  { page: 'runs', title: 'Runs' },
  { page: 'requests', title: 'Requests' },
  { page: 'inbox', title: 'Inbox' },
  { page: 'apps', title: 'Apps' },
  { page: 'pools', title: 'Pools' },
  { page: 'queues', title: 'Queues' },
  { page: 'optimizer', title: 'Optimizer' },
  { page: 'ledger', title: 'Ledger' },
];

function Console() {
  const route = useRoute();
  const [session, setSession] = useState<Session | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    api<Session>('/session').then(setSession, setError);
  }, [attempt]);
  useEffect(() => {
    const title = PAGES.find((entry) => entry.page === route.page)?.title ?? 'Runs';
    document.title = `${route.page === 'runs' && route.parts[0] !== undefined ? route.parts[0] : title} · uhlp console`;
  }, [route.page, route.parts[0]]);

  if (error instanceof ApiError && error.status === 401) return <SignIn onSignedIn={() => { setError(undefined); setAttempt((n) => n + 1); }} />;
  const canAct = session?.principal.role === 'operator';
  return (
    <>
      <header class="top">
        <a class="brand" href={href('runs')}>
          uhlp console
        </a>
        <nav aria-label="console pages">
          <ul>
            {PAGES.map((entry) => (
              <li>
                <a href={href(entry.page)} aria-current={route.page === entry.page ? 'page' : undefined}>
                  {entry.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {session !== undefined ? (
          <span class="who">
            {session.principal.name} · {session.principal.role}
          </span>
        ) : null}
      </header>
      <main id="main">
        <h1 class="visually-hidden">{PAGES.find((entry) => entry.page === route.page)?.title ?? 'Runs'}</h1>
        <ErrorBox error={error} />
        {session === undefined && error === undefined ? <Loading /> : null}
        {session !== undefined ? <Page route={route} session={session} canAct={canAct} /> : null}
      </main>
    </>
  );
}

function Page({ route, session: current, canAct: act }: { route: Route; session: Session; canAct: boolean }) {
    switch (route.page) {
      case 'requests':
        return route.parts[0] !== undefined ? <RequestPage id={route.parts[0]} /> : <RequestsPage route={route} />;
      case 'inbox':
        return <InboxPage canAct={act} />;
      case 'apps':
        return <AppsPage sandboxOrigin={current.sandboxOrigin} canAct={act} />;
      case 'pools':
        return <PoolsPage />;
      case 'queues':
        return <QueuesPage canAct={act} />;
      case 'optimizer':
        return <OraclePage canAct={act} />;
      case 'ledger':
        return <LedgerPage />;
      default:
        return route.parts[0] !== undefined ? <RunPage id={route.parts[0]} canAct={act} /> : <RunsPage route={route} />;
    }
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  return (
    <main id="main" class="sign-in">
      <h1>uhlp console</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          api('/sign-in', { method: 'POST', body: { token } }).then(onSignedIn, setError);
        }}
      >
        <label for="token">Console token</label>
        <input id="token" type="password" autoComplete="current-password" value={token} onInput={(event) => setToken(event.currentTarget.value)} />
        <button type="submit" class="button button-primary">
          Sign in
        </button>
        <ErrorBox error={error} />
      </form>
    </main>
  );
}

const root = document.getElementById('app');
if (root !== null) render(<Console />, root);
