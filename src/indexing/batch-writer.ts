import { performance } from 'node:perf_hooks';
import { unpackUpdate } from '../store/packed.ts';
import type { AnyUpdate, FileTouch, Store, WriteBehind } from '../store/types.ts';

const COMMIT_FILES = 256;
/** A batch also commits once its files hold this many bytes (of text read): large files weigh on memory, not count. */
const COMMIT_BYTES = 16 * 2 ** 20;
const COMMIT_MS = 500;
/** With a writer behind, a batch grows to this many files while the one before is written. */
const BEHIND_MAX_FILES = 512;
const BEHIND_MAX_BYTES = 2 * COMMIT_BYTES;

/**
 * Gathers file updates and touches, and writes them to the store a batch at a time. With a writer behind (a long run
 * on SQLite), a batch is handed to its thread and this one goes on handing out files: one batch is written at a time,
 * and the next grows meanwhile, up to BEHIND_MAX_FILES or BEHIND_MAX_BYTES, past which a commit waits for the write.
 */
export class BatchWriter {
  private batch: AnyUpdate[] = [];
  private touches: FileTouch[] = [];
  /** How much text the batch holds: its files' sizes in bytes, the touches' texts in characters. */
  private bytes = 0;
  private lastCommit = performance.now();
  /** The batch handed to the writer behind, until it is written. */
  private writing: Promise<void> | undefined;
  /** Writes running on this thread (alone()): no batch is handed over until they end. */
  private writingHere = 0;
  /** Settles once every write begun on this thread has ended (flush waits for them). */
  private hereDone: Promise<unknown> = Promise.resolve();
  /** The writer behind's failure, thrown to the next commit, write or flush. */
  private failed: { error: unknown } | undefined;

  constructor(
    private readonly store: Store,
    private readonly behind?: WriteBehind,
  ) {}

  update(u: AnyUpdate): void {
    this.batch.push(u);
    this.bytes += u.file.size;
  }

  touch(t: FileTouch): void {
    this.touches.push(t);
    this.bytes += (t.trigrams ?? t.text)?.length ?? 0;
  }

  /** Whether the batch should be committed now. */
  due(): boolean {
    const files = this.batch.length + this.touches.length;
    if (files < COMMIT_FILES && this.bytes < COMMIT_BYTES && performance.now() - this.lastCommit <= COMMIT_MS)
      return false;
    // behind a write, a batch waits for it until it reaches its bound
    return !this.writing || files >= BEHIND_MAX_FILES || this.bytes >= BEHIND_MAX_BYTES;
  }

  async commit(): Promise<void> {
    this.check();
    if (!this.behind) {
      const { updates, touched } = this.take();
      if (updates.length) await this.store.replaceFiles(updates.map(unpackUpdate));
      if (touched.length) await this.store.touchFiles(touched);
      return;
    }
    if (this.writingHere) return;
    if (this.writing) {
      if (this.batch.length + this.touches.length < BEHIND_MAX_FILES && this.bytes < BEHIND_MAX_BYTES) return;
      await this.writing;
      this.check();
      // another commit may have handed a batch over while this one waited, or a write on this thread begun
      if (this.busy() || this.writingHere) return;
    }
    const { updates, touched } = this.take();
    if (!updates.length && !touched.length) return;
    this.writing = this.behind.write(updates, touched).then(
      () => {
        this.writing = undefined;
      },
      (error: unknown) => {
        this.failed = { error };
        this.writing = undefined;
      },
    );
  }

  /**
   * Runs a write on this thread (its own transaction) once the batch handed over is written; none is handed over
   * until it ends, so the two connections never wait on each other.
   */
  async alone<T>(write: () => Promise<T>): Promise<T> {
    this.writingHere++;
    const run = (async () => {
      while (this.writing) await this.writing;
      this.check();
      return write();
    })();
    this.hereDone = Promise.all([this.hereDone, run.catch(() => {})]);
    try {
      return await run;
    } finally {
      this.writingHere--;
    }
  }

  /** Writes everything gathered, and waits for it: what follows may read it, or write on this thread. */
  async flush(): Promise<void> {
    await this.hereDone;
    while (this.writing) await this.writing;
    await this.commit();
    while (this.writing) await this.writing;
    this.check();
  }

  // read through a method: a write ends while a commit awaits another
  private busy(): boolean {
    return this.writing !== undefined;
  }

  private check(): void {
    if (this.failed) throw this.failed.error;
  }

  private take(): { updates: AnyUpdate[]; touched: FileTouch[] } {
    // take the batch first: outcomes that arrive while it is written go to the next one
    const taken = { updates: this.batch, touched: this.touches };
    this.batch = [];
    this.touches = [];
    this.bytes = 0;
    this.lastCommit = performance.now();
    return taken;
  }
}
