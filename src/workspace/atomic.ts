import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Writes `data` next to `abs` and renames it over: readers see the old file or the new one, never half. */
export function writeAtomic(abs: string, data: Buffer | string, newMode = 0o644): void {
  mkdirSync(dirname(abs), { recursive: true });
  const tmp = join(dirname(abs), `.${basename(abs)}.quarry-${process.pid}.tmp`);
  const mode = existsSync(abs) ? statSync(abs).mode & 0o7777 : newMode;
  const fd = openSync(tmp, 'w', mode);
  try {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    writeSync(fd, buf, 0, buf.length);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, abs);
}
