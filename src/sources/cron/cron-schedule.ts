/**
 * A cron schedule in an IANA time zone, and the one DST policy of uhlp
 * (docs/sources.md), applied on top of croner's matching:
 *
 * - Wall-clock times that do not exist (the hour skipped when clocks go
 *   forward) fire once, at the first instant after the gap: `30 2 * * *` in
 *   Europe/Paris runs at 03:00 on that day, and `*&#47;15 2 * * *` runs once
 *   there, not four times and not never.
 * - Wall-clock times that happen twice (the hour repeated when clocks go back)
 *   fire once, at their first occurrence, when the hour field names hours
 *   (`30 1 * * *`, `0 1-3 * * *`); when the hour field is `*` or `*&#47;n` the
 *   schedule is an interval, and it keeps firing on real time through both
 *   passes (`0 * * * *` stays hourly).
 *
 * Slots are instants; `next(after)` is the first slot strictly after `after`.
 */
import { Cron } from 'croner';

export class CronScheduleError extends Error {}

/** How far to look for a zone's offset changes between two slots, at once (the scan walks in these steps). */
const SCAN_STEP_MS = 6 * 3600_000;

export class CronSchedule {
  private readonly zoned: Cron;
  /** The same pattern read in UTC: it tells whether a wall-clock time (one that may not exist in the zone) matches. */
  private readonly wall: Cron;
  private readonly intervalHours: boolean;
  private readonly offsets: ZoneOffsets;

  /** Throws CronScheduleError for a pattern or zone it cannot read. */
  constructor(
    readonly pattern: string,
    readonly timezone: string,
  ) {
    const fields = pattern.trim().split(/\s+/);
    if (fields.length !== 5 && fields.length !== 6) {
      throw new CronScheduleError(`"${pattern}" has ${fields.length} fields; a schedule has five (minute hour day month weekday) or six (seconds first)`);
    }
    this.offsets = new ZoneOffsets(timezone);
    try {
      this.zoned = new Cron(pattern, { timezone, paused: true, mode: fields.length === 6 ? '6-part' : '5-part' });
      this.wall = new Cron(pattern, { timezone: 'Etc/UTC', paused: true, mode: fields.length === 6 ? '6-part' : '5-part' });
    } catch (error) {
      throw new CronScheduleError(`"${pattern}" is not a cron schedule: ${error instanceof Error ? error.message : String(error)}`);
    }
    const hour = fields[fields.length === 6 ? 2 : 1]!;
    this.intervalHours = hour === '*' || hour.startsWith('*/');
  }

  /** The first slot strictly after `after`; undefined when the schedule has no more. */
  next(after: Date): Date | undefined {
    let from = after;
    for (let guard = 0; guard < 1000; guard++) {
      const candidate = this.zoned.nextRun(from) ?? undefined;
      const gap = this.gapSlot(from, candidate);
      if (gap !== undefined && (candidate === undefined || gap.getTime() <= candidate.getTime())) return gap;
      if (candidate === undefined) return undefined;
      if (!this.intervalHours && this.isSecondPass(candidate)) {
        from = candidate;
        continue;
      }
      return candidate;
    }
    return undefined;
  }

  /** Slots in (from, to], at most `limit`. */
  between(from: Date, to: Date, limit: number): Date[] {
    const slots: Date[] = [];
    let cursor = from;
    while (slots.length < limit) {
      const slot = this.next(cursor);
      if (slot === undefined || slot.getTime() > to.getTime()) break;
      slots.push(slot);
      cursor = slot;
    }
    return slots;
  }

  /**
   * The first instant after a skipped stretch of wall-clock time in (after, until]
   * when the pattern matches a wall-clock time inside it.
   */
  private gapSlot(after: Date, until: Date | undefined): Date | undefined {
    const end = until?.getTime() ?? after.getTime() + 366 * 86400_000;
    for (const transition of this.offsets.transitions(after.getTime(), end)) {
      if (transition.after <= transition.before) continue;
      // Wall-clock times from the old offset's reading of the instant to the new one's do not exist.
      const gapStart = transition.at + transition.before;
      const gapEnd = transition.at + transition.after;
      const match = this.wall.nextRun(new Date(gapStart - 1));
      if (match !== null && match.getTime() < gapEnd && transition.at > after.getTime()) return new Date(transition.at);
    }
    return undefined;
  }

  /** Whether the wall-clock time of `instant` already happened once, an offset change earlier. */
  private isSecondPass(instant: Date): boolean {
    const t = instant.getTime();
    const now = this.offsets.at(t);
    const earlier = this.offsets.at(t - 3 * 3600_000);
    if (earlier <= now) return false;
    const back = earlier - now;
    return this.offsets.at(t - back) === earlier;
  }
}

interface Transition {
  /** The first instant at the new offset, epoch ms. */
  readonly at: number;
  /** Offsets from UTC, ms. */
  readonly before: number;
  readonly after: number;
}

/** A zone's UTC offsets, read from Intl (the runtime's time zone database). */
class ZoneOffsets {
  private readonly format: Intl.DateTimeFormat;

  constructor(timezone: string) {
    try {
      this.format = new Intl.DateTimeFormat('en-US', {
        timeZone: timezone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      throw new CronScheduleError(`"${timezone}" is not an IANA time zone`);
    }
  }

  /** The offset at an instant, ms (wall clock = instant + offset). */
  at(instant: number): number {
    const parts: Record<string, number> = {};
    for (const part of this.format.formatToParts(new Date(instant))) if (part.type !== 'literal') parts[part.type] = Number(part.value);
    const wall = Date.UTC(parts['year']!, parts['month']! - 1, parts['day']!, parts['hour']!, parts['minute']!, parts['second']!);
    return wall - Math.floor(instant / 1000) * 1000;
  }

  /** The offset changes in (from, to]. */
  *transitions(from: number, to: number): Generator<Transition> {
    let left = Math.floor(from / 1000) * 1000;
    let leftOffset = this.at(left);
    while (left < to) {
      const right = Math.min(left + SCAN_STEP_MS, to);
      const rightOffset = this.at(right);
      if (rightOffset !== leftOffset) {
        // Offsets change on whole seconds: bisect down to one.
        let lo = left;
        let hi = right;
        while (hi - lo > 1000) {
          const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
          if (this.at(mid) === leftOffset) lo = mid;
          else hi = mid;
        }
        yield { at: hi, before: leftOffset, after: rightOffset };
      }
      left = right;
      leftOffset = rightOffset;
    }
  }
}
