import { deserialize, serialize } from 'node:v8';
import type { AnyUpdate, FileUpdate, PackedUpdate } from './types.ts';

/**
 * Packing a file's update (PackedUpdate in types.ts): a parse worker serializes all but the row once, the buffer moves
 * to the thread that hands out files and on to the writer thread without a copy, and the writer unpacks it.
 */
export function packUpdate(update: FileUpdate): PackedUpdate {
  const { file, ...rest } = update;
  const buf = serialize(rest);
  // a view of a buffer of its own, which a transfer can move (a view of a shared pool could not be)
  const packed =
    buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength
      ? new Uint8Array(buf.buffer, 0, buf.byteLength)
      : new Uint8Array(buf);
  return { file, chunkCount: update.chunks.length, packed };
}

export const isPacked = (u: AnyUpdate): u is PackedUpdate => 'packed' in u;

export function unpackUpdate(u: AnyUpdate): FileUpdate {
  if (!isPacked(u)) return u;
  return { file: u.file, ...(deserialize(u.packed) as Omit<FileUpdate, 'file'>) };
}

export const chunkCount = (u: AnyUpdate): number => (isPacked(u) ? u.chunkCount : u.chunks.length);

/** The buffers to move with a message that carries these updates: each one leaves the sending thread. */
export const packedBuffers = (updates: readonly AnyUpdate[]): ArrayBuffer[] =>
  updates.flatMap((u) => (isPacked(u) ? [u.packed.buffer as ArrayBuffer] : []));
