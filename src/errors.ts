/** Stable error codes; the CLI maps each to an exit code. */
export type QuarryErrorCode =
  | 'NO_INDEX'
  | 'NO_ROOT'
  | 'LOCKED'
  | 'BAD_INPUT'
  | 'BAD_CONFIG'
  | 'SCHEMA_TOO_NEW'
  | 'IO'
  | 'TOO_BIG'
  | 'LLM'
  | 'EDIT'
  /** An indexed file or repository that is not there (or that this token may not see). */
  | 'NOT_FOUND'
  /** A token missing, wrong, or without the right to do this. */
  | 'AUTH'
  /** A remote quarry that cannot be reached or answers something that is not quarry's API. */
  | 'REMOTE'
  | 'INTERNAL';

const EXIT_CODES: Record<QuarryErrorCode, number> = {
  BAD_INPUT: 2,
  BAD_CONFIG: 2,
  NO_ROOT: 3,
  NO_INDEX: 3,
  LOCKED: 4,
  SCHEMA_TOO_NEW: 5,
  IO: 6,
  TOO_BIG: 7,
  LLM: 8,
  EDIT: 9,
  NOT_FOUND: 2,
  AUTH: 10,
  REMOTE: 11,
  INTERNAL: 70,
};

/**
 * The one error type that crosses module boundaries. Its message is a single line that says what to do next;
 * `cause` keeps the underlying error for `--verbose`.
 */
export class QuarryError extends Error {
  readonly code: QuarryErrorCode;
  constructor(code: QuarryErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'QuarryError';
    this.code = code;
  }
  get exitCode(): number {
    return EXIT_CODES[this.code];
  }
}

export function isQuarryError(err: unknown): err is QuarryError {
  return err instanceof QuarryError;
}

/**
 * An error from below quarry whose cause is known, as quarry's own one-line error; any other error as it is. Every
 * face reports errors through this, so a corrupt index reads the same on the CLI, over HTTP and over MCP.
 */
export function knownError(err: unknown): unknown {
  if (isQuarryError(err)) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code))
    return new QuarryError('IO', 'the index is corrupt: run `quarry reset`, then `quarry index`', {
      cause: err,
    });
  // an install that lost its node_modules (or never finished): the package is named, and the set-up that restores it
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  const missing =
    code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
      ? /Cannot find (?:package|module) '([^']+)'/.exec(message)?.[1]
      : undefined;
  if (missing && !missing.startsWith('.') && !missing.startsWith('/'))
    return new QuarryError(
      'INTERNAL',
      `quarry's dependency ${missing} is not installed: run ./scripts/setup.sh (or npm install) in the quarry folder`,
      { cause: err },
    );
  if (/Could not locate the bindings file/.test(message))
    return new QuarryError(
      'INTERNAL',
      "a native module of quarry's is not built for this Node: run ./scripts/setup.sh in the quarry folder",
      { cause: err },
    );
  return err;
}

/**
 * An error as a client of a server may read it (HTTP, MCP): where the server's store lives (user, host, port,
 * database) stays in the server's log, never in a response.
 */
export function publicMessage(err: unknown): string {
  if (!isQuarryError(err)) return `internal error: ${(err as Error).message}`;
  return err.message.replace(
    /\b(?:postgres(?:ql)?|chroma(?:\+https?)?):\/\/[^\s)#]+(?:#\S+)?/gi,
    "the server's store",
  );
}
