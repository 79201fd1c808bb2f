/**
 * Small pieces every page uses. Every value from the core is rendered as text
 * (Preact escapes it): run data, model output and app errors are
 * attacker-controlled, and nothing here ever sets HTML.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api.js';
import { json } from '../format.js';

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status.replace(/[^a-z_-]/g, '')}`}>{status.replace('_', ' ')}</span>;
}

export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const text = error instanceof ApiError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

export function Loading() {
  return (
    <p class="muted" role="status">
      Loading…
    </p>
  );
}

export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" aria-label={label} tabIndex={0}>
      {json(value)}
    </pre>
  );
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card" aria-label={title}>
      <div class="card-head">
        <h2>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** Loads `load()` now and on `reload()`; `every` ms keeps it fresh. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[], every?: number): { data: T | undefined; error: unknown; reload: () => void } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((value) => value + 1), []);
  useEffect(() => {
    let live = true;
    load().then(
      (value) => {
        if (!live) return;
        setData(value);
        setError(undefined);
      },
      (failure: unknown) => live && setError(failure),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  useEffect(() => {
    if (every === undefined) return;
    const timer = setInterval(reload, every);
    return () => clearInterval(timer);
  }, [every, reload]);
  return { data, error, reload };
}

/** An action button: disabled for the read role, busy while it runs, with its outcome announced. */
export function ActionButton({
  label,
  run,
  canAct,
  kind = 'primary',
  confirm,
}: {
  label: string;
  run: () => Promise<unknown>;
  canAct: boolean;
  kind?: 'primary' | 'danger' | 'plain';
  confirm?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const click = async (): Promise<void> => {
    if (confirm !== undefined && !window.confirm(confirm)) return;
    setBusy(true);
    setError(undefined);
    try {
      await run();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button type="button" class={`button button-${kind}`} disabled={!canAct || busy} onClick={() => void click()} title={canAct ? undefined : 'needs the operator role'}>
        {busy ? `${label}…` : label}
      </button>
      <ErrorBox error={error} />
    </span>
  );
}
