import { describe, expect, it } from 'vitest';
import { CronSchedule, CronScheduleError } from './cron-schedule.js';

/** The slots in [from, to) as `<UTC instant> <local wall time>`. */
function slots(pattern: string, timezone: string, from: string, to: string): string[] {
  const schedule = new CronSchedule(pattern, timezone);
  const local = new Intl.DateTimeFormat('sv-SE', { timeZone: timezone, dateStyle: 'short', timeStyle: 'medium' });
  return schedule.between(new Date(Date.parse(from) - 1), new Date(Date.parse(to) - 1), 100).map((d) => `${d.toISOString().slice(11, 16)}Z ${local.format(d).slice(11, 16)}`);
}

/**
 * The DST policy as a matrix: zone x transition x schedule shape. Skipped wall
 * times fire once at the first instant after the gap; repeated wall times fire
 * once (the first pass) when the hour field names hours, and on real time
 * through both passes when it is `*` or `*` + step.
 */
describe('CronSchedule DST policy', () => {
  const cases: Array<[string, string, string, string, string, string[]]> = [
    // Europe/Paris, spring forward 2025-03-30 02:00 CET -> 03:00 CEST (01:00Z).
    ['Paris spring: a time in the gap fires at the gap end', 'Europe/Paris', '30 2 * * *', '2025-03-29T23:00:00Z', '2025-03-30T22:00:00Z', ['01:00Z 03:00']],
    ['Paris spring: several times in the gap fire once', 'Europe/Paris', '*/15 2 * * *', '2025-03-29T23:00:00Z', '2025-03-30T22:00:00Z', ['01:00Z 03:00']],
    ['Paris spring: a gap slot and the gap end are one fire', 'Europe/Paris', '0 2,3 * * *', '2025-03-29T23:00:00Z', '2025-03-30T22:00:00Z', ['01:00Z 03:00']],
    ['Paris spring: hourly skips the missing hour', 'Europe/Paris', '0 * * * *', '2025-03-29T23:30:00Z', '2025-03-30T03:30:00Z', ['00:00Z 01:00', '01:00Z 03:00', '02:00Z 04:00', '03:00Z 05:00']],
    ['Paris spring: outside the gap nothing moves', 'Europe/Paris', '30 3 * * *', '2025-03-29T23:00:00Z', '2025-03-30T22:00:00Z', ['01:30Z 03:30']],
    // Europe/Paris, fall back 2025-10-26 03:00 CEST -> 02:00 CET (01:00Z).
    ['Paris fall: a repeated time fires once, first pass', 'Europe/Paris', '30 2 * * *', '2025-10-25T22:00:00Z', '2025-10-26T22:00:00Z', ['00:30Z 02:30']],
    ['Paris fall: named hour with a minute step fires once per wall time', 'Europe/Paris', '*/20 2 * * *', '2025-10-25T22:00:00Z', '2025-10-26T22:00:00Z', ['00:00Z 02:00', '00:20Z 02:20', '00:40Z 02:40']],
    ['Paris fall: hourly keeps real time through both passes', 'Europe/Paris', '0 * * * *', '2025-10-25T23:30:00Z', '2025-10-26T03:30:00Z', ['00:00Z 02:00', '01:00Z 02:00', '02:00Z 03:00', '03:00Z 04:00']],
    ['Paris fall: every 30 minutes keeps real time', 'Europe/Paris', '*/30 * * * *', '2025-10-26T00:00:00Z', '2025-10-26T02:00:00Z', ['00:00Z 02:00', '00:30Z 02:30', '01:00Z 02:00', '01:30Z 02:30']],
    // America/New_York, spring 2025-03-09 02:00 EST -> 03:00 EDT (07:00Z); fall 2025-11-02 02:00 EDT -> 01:00 EST (06:00Z).
    ['New York spring: 02:30 fires at 03:00', 'America/New_York', '30 2 * * *', '2025-03-09T05:00:00Z', '2025-03-10T04:00:00Z', ['07:00Z 03:00']],
    ['New York fall: 01:30 fires once', 'America/New_York', '30 1 * * *', '2025-11-02T04:00:00Z', '2025-11-03T04:00:00Z', ['05:30Z 01:30']],
    // Australia/Lord_Howe moves by 30 minutes: 02:00 -> 02:30 on 2025-10-05 (15:30Z), 02:00 -> 01:30 on 2025-04-06 (15:00Z).
    ['Lord Howe spring: a half-hour gap', 'Australia/Lord_Howe', '15 2 * * *', '2025-10-04T13:00:00Z', '2025-10-05T13:00:00Z', ['15:30Z 02:30']],
    ['Lord Howe fall: a half-hour repeat', 'Australia/Lord_Howe', '45 1 * * *', '2025-04-05T13:00:00Z', '2025-04-06T13:00:00Z', ['14:45Z 01:45']],
    // No DST at all.
    ['UTC: no transitions', 'UTC', '0 3 * * *', '2025-03-30T00:00:00Z', '2025-03-31T00:00:00Z', ['03:00Z 03:00']],
    ['Tokyo: no DST', 'Asia/Tokyo', '30 2 * * *', '2025-03-29T15:00:00Z', '2025-03-30T15:00:00Z', ['17:30Z 02:30']],
  ];
  it.each(cases)('%s', (_name, timezone, pattern, from, to, expected) => {
    expect(slots(pattern, timezone, from, to)).toEqual(expected);
  });

  it('reads six fields as seconds first', () => {
    const schedule = new CronSchedule('*/10 * * * * *', 'UTC');
    expect(schedule.next(new Date('2025-01-01T00:00:01Z'))?.toISOString()).toBe('2025-01-01T00:00:10.000Z');
  });

  it('gives the next slot strictly after the instant', () => {
    const schedule = new CronSchedule('0 3 * * *', 'Europe/Paris');
    expect(schedule.next(new Date('2025-06-01T01:00:00Z'))?.toISOString()).toBe('2025-06-02T01:00:00.000Z');
  });

  it.each([
    ['* * * *', 'UTC', /four|4 fields/],
    ['* * * * * * *', 'UTC', /7 fields/],
    ['61 * * * *', 'UTC', /not a cron schedule/],
    ['0 3 * * *', 'Mars/Olympus', /not an IANA time zone/],
  ])('refuses %s in %s', (pattern, timezone, message) => {
    expect(() => new CronSchedule(pattern, timezone)).toThrow(CronScheduleError);
    expect(() => new CronSchedule(pattern, timezone)).toThrow(message);
  });
});
