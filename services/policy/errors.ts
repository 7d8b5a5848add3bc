// Load-time errors. The message is the whole contract ("FILE: rules[INDEX] (id):
// reason"), because operators read it in a failed start-up log or a 400 body.

export class PolicyLoadError extends Error {
  readonly code = 'invalid_policy';
  constructor(
    message: string,
    /** The file the error is about, as it was named to the loader. */
    readonly file?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PolicyLoadError';
  }
}

/**
 * A job or CLI call named a project that has no folder under `projects/`.
 * A PolicyLoadError too: to a caller it is the same 400 / exit 2.
 */
export class UnknownProjectError extends PolicyLoadError {
  constructor(readonly project: string, known: string[]) {
    super(`unknown project '${project}' (known: ${known.length ? known.join(', ') : 'none'})`);
    this.name = 'UnknownProjectError';
  }
}

/** Builds the contract message for a problem inside one rule. */
export function ruleError(file: string, index: number, id: string | undefined, reason: string): PolicyLoadError {
  return new PolicyLoadError(`${file}: rules[${index}] (${id ?? '?'}): ${reason}`, file);
}

/**
 * A submitter's policy would loosen the operator's (POLICY.md §7): an
 * `allow` rule, or a default looser than the operator layers give.
 */
export class PolicyLoosensError extends PolicyLoadError {
  override readonly code = 'policy_loosens' as never;
  constructor(message: string, readonly rule: { index?: number; id?: string; default?: string }, file?: string) {
    super(message, file);
    this.name = 'PolicyLoosensError';
  }
}
