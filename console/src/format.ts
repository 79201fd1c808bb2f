/** How the pages show times, durations and values. All text: nothing here makes HTML. */
export function time(iso: string | undefined | null): string {
  if (iso === undefined || iso === null) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { hour12: false });
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function percent(ratio: number | null | undefined): string {
  return ratio === null || ratio === undefined ? '–' : `${(ratio * 100).toFixed(1)}%`;
}

/** A value as indented JSON text (strings shown as they are). */
export function json(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2) ?? 'null';
  } catch {
    return String(value);
  }
}
