import type pc from 'picocolors';

type Colors = ReturnType<typeof pc.createColors>;

/**
 * string-width, imported by the first progress display on a terminal: importing it builds an `Intl.Segmenter`
 * (~10 ms), which a command that draws nothing (a search, a script's `--json`) should not pay at start-up.
 */
let stringWidth: ((text: string) => number) | undefined;

export async function loadStringWidth(): Promise<void> {
  stringWidth ??= (await import('string-width')).default;
}

/** The columns a progress label keeps (its first word, which phase this is) before the rate and ETA give way. */
const LABEL_MIN = 10;

/**
 * A one-line progress display on a terminal (redrawn in place), or plain lines every few seconds otherwise, so that
 * logs stay readable.
 */
export class Progress {
  private lastPlain = 0;
  private lastLabel = '';
  private drawn = false;

  /** A progress display; on a terminal, once string-width is loaded (it measures what is drawn). */
  static async open(stream: NodeJS.WriteStream, c: Colors, enabled = true): Promise<Progress> {
    if (enabled && stream.isTTY) await loadStringWidth();
    return new Progress(stream, c, enabled);
  }

  private constructor(
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
    const etaText = etaMs !== undefined ? ` · ETA ${formatDuration(etaMs)}` : '';
    const stats = `${done}/${total}${unit}${rateText}${etaText}`;
    const measure = stringWidth; // loaded when this opened on a terminal
    if (this.tty && measure) {
      const width = 24;
      const filled = Math.round(pct * width);
      const bar = this.c.cyan('█'.repeat(filled)) + this.c.dim('░'.repeat(width - filled));
      // one row, or the next redraw clears only the last of them: the label gives way first, down to a few
      // columns (which phase this is), then the rate, then the time left; the bar keeps its width (issue 65)
      const columns = (this.stream as { columns?: number }).columns || 80;
      const room = (s: string) => columns - 1 - measure(` ${bar} ${s}`);
      const keep = Math.min(LABEL_MIN, measure(label));
      const shown =
        [stats, `${done}/${total}${unit}${etaText}`].find((s) => room(s) >= keep) ??
        `${done}/${total}${unit}`;
      this.stream.write(`\r\x1b[2K${fitWidth(label, room(shown))} ${bar} ${shown}`);
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

/** Text cut to `columns` terminal columns (string-width, loaded first: `loadStringWidth`), with an ellipsis when cut. */
export function fitWidth(text: string, columns: number): string {
  if (!stringWidth) throw new Error('fitWidth before loadStringWidth');
  if (stringWidth(text) <= columns) return text;
  if (columns <= 1) return '';
  let out = '';
  for (const ch of text) {
    if (stringWidth(`${out}${ch}…`) > columns) break;
    out += ch;
  }
  return `${out}…`;
}
