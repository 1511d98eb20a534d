import { Cron } from "croner";
import { InvalidArgumentError } from "../errors.js";

/**
 * A parsed cron expression read in a time zone: 5 fields (minute hour day-of-month month
 * day-of-week), or 6 with seconds first. Day-of-month and day-of-week combine with OR, as in Vixie
 * cron. Slots are whole seconds.
 */
export class CronSchedule {
  private readonly cron: Cron;

  /** Throws InvalidArgumentError naming `cron` or `time_zone`. */
  constructor(
    readonly expression: string,
    readonly timeZone: string,
  ) {
    const fields = expression.trim().split(/\s+/).filter(Boolean).length;
    if (fields !== 5 && fields !== 6) {
      throw new InvalidArgumentError(
        "cron",
        "must have 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first",
      );
    }
    checkTimeZone(timeZone);
    try {
      this.cron = new Cron(expression.trim(), { timezone: timeZone, paused: true });
    } catch (err) {
      throw new InvalidArgumentError("cron", `is not a valid cron expression (${(err as Error).message})`);
    }
  }

  /** The first slot strictly after `t`, or null when the expression never matches again. */
  next(t: Date): Date | null {
    return this.cron.nextRun(t);
  }

  /** The latest slot at or before `t`, or null when there is none. */
  latestAtOrBefore(t: Date): Date | null {
    // previousRuns is exclusive of its reference and works in whole seconds.
    const ref = new Date(Math.floor(t.getTime() / 1000) * 1000 + 1000);
    return this.cron.previousRuns(1, ref)[0] ?? null;
  }
}

/** UTC or an IANA time zone name Intl knows (e.g. Europe/Berlin). */
export function checkTimeZone(tz: string): string {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
  } catch {
    throw new InvalidArgumentError(
      "time_zone",
      "must be UTC or an IANA time zone name such as Europe/Berlin",
    );
  }
  return tz;
}
