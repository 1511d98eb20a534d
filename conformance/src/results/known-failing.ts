import { readFileSync } from "node:fs";
import { globToRegExp } from "../glob.js";
import type { CaseResult, Outcome } from "./case-result.js";

/**
 * A known-failing list: one case name or glob per line ("*" matches any run of characters), "#" starts a comment. Strict, as Connect's runner is: a listed case that passes fails the run
 * (take it off the list), and so does a line that matches no case (a typo or a renamed case).
 */
export class KnownFailing {
  readonly #patterns: Array<{ text: string; re: RegExp }>;

  constructor(lines: readonly string[]) {
    this.#patterns = lines
      .map((l) => l.replace(/#.*/, "").trim())
      .filter((l) => l !== "")
      .map((text) => ({ text, re: globToRegExp(text) }));
  }

  static fromFile(path: string): KnownFailing {
    return new KnownFailing(readFileSync(path, "utf8").split("\n"));
  }

  /** Whether the list names the case. */
  lists(name: string): boolean {
    return this.#patterns.some((p) => p.re.test(name));
  }

  /** Patterns that name none of `names`. */
  unmatched(names: readonly string[]): string[] {
    return this.#patterns.filter((p) => !names.some((n) => p.re.test(n))).map((p) => p.text);
  }

  outcome(r: CaseResult): Outcome {
    if (r.notApplicable !== undefined) return "not-applicable";
    if (this.lists(r.name)) return r.passed ? "unexpected-pass" : "known-failing";
    return r.passed ? "passed" : "failed";
  }
}
