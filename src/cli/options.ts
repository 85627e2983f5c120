import { InvalidArgumentError } from 'commander';

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number, 0 or more');
  return n;
}

/** Repeatable, comma-separated option values: `--lang ts --lang py` or `--lang ts,py`. */
export function collect(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean),
  ];
}

/** `--port`: a whole number 0–65535, refused at parse time (exit 2) otherwise. */
export function portNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n > 65535)
    throw new InvalidArgumentError('expected a port: a whole number from 1 to 65535 (0 picks a free one)');
  return n;
}

export const INIT_HELP = 'start an index here when this folder is no project yet (default: refuse, exit 3)';

/** Resolves on Ctrl-C or SIGTERM. */
export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}
