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
