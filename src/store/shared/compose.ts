/** The names of an object's methods (optional ones included). */
export type MethodNames<T> = {
  [K in keyof T]-?: NonNullable<T[K]> extends (...args: never[]) => unknown ? K : never;
}[keyof T];

/**
 * An object whose methods `names` call the same methods of `target`, looked up on it at each call: what a composite
 * driver takes from one engine as it is (the Chroma driver forwards most of the core to its SQLite store), instead of
 * an arrow a method written out by hand. Only methods can be named, and the result has exactly their types.
 */
export function forward<T extends object, K extends MethodNames<T>>(
  target: T,
  names: readonly K[],
): Pick<T, K> {
  const out: Partial<Pick<T, K>> = {};
  for (const name of names) {
    const call = (...args: unknown[]): unknown =>
      (target[name] as (...a: unknown[]) => unknown).apply(target, args);
    out[name] = call as T[K];
  }
  return out as Pick<T, K>;
}
