import type pc from 'picocolors';
import stringWidth from 'string-width';

type Colors = ReturnType<typeof pc.createColors>;

/**
 * A one-line progress display on a terminal (redrawn in place), or plain lines every few seconds otherwise, so that
 * logs stay readable.
 */
export class Progress {
  private lastPlain = 0;
  private lastLabel = '';
  private drawn = false;
  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly c: Colors,
    private readonly enabled = true,
  ) {}

  get tty(): boolean {
    return Boolean(this.stream.isTTY);
  }

  update(
    label: string,
    done: number,
    total: number,
    rate: number,
    etaMs?: number,
    rateUnit = 'files/s',
  ): void {
    if (!this.enabled) return;
    const pct = total > 0 ? done / total : 1;
    const unit = rateUnit ? ' files' : '';
    const rateText = rateUnit ? ` · ${rate.toFixed(0)} ${rateUnit}` : '';
    const stats = `${done}/${total}${unit}${rateText}${etaMs !== undefined ? ` · ETA ${formatDuration(etaMs)}` : ''}`;
    if (this.tty) {
      const width = 24;
      const filled = Math.round(pct * width);
      const bar = this.c.cyan('█'.repeat(filled)) + this.c.dim('░'.repeat(width - filled));
      // one row, or the next redraw clears only the last of them: the label gives way first
      const columns = (this.stream as { columns?: number }).columns || 80;
      const room = columns - 1 - stringWidth(` ${bar} ${stats}`);
      this.stream.write(`\r\x1b[2K${fitWidth(label, room)} ${bar} ${stats}`);
      this.drawn = true;
    } else {
      const now = Date.now();
      if (label !== this.lastLabel) this.lastPlain = 0;
      this.lastLabel = label;
      if (now - this.lastPlain < 2000 && done < total) return;
      this.lastPlain = now;
      this.stream.write(`${label}: ${stats}\n`);
    }
  }

  /** Clears the line (TTY) so the next output starts clean. */
  end(): void {
    if (this.drawn && this.tty) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return `${m}m${Math.round(s % 60)
    .toString()
    .padStart(2, '0')}s`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** Text cut to `columns` terminal columns (string-width), with an ellipsis when cut. */
export function fitWidth(text: string, columns: number): string {
  if (stringWidth(text) <= columns) return text;
  if (columns <= 1) return '';
  let out = '';
  for (const ch of text) {
    if (stringWidth(`${out}${ch}…`) > columns) break;
    out += ch;
  }
  return `${out}…`;
}
