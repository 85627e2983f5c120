/** How quickly a rate forgets: over about this long, so that it follows the pace once the start-up is behind it. */
const RATE_SMOOTHING_MS = 2000;

/**
 * The work's own rate, in items per second, for a progress line's ETA: counted from the first item done, not from
 * the start, so that the start-up (workers spawning, grammars or a model loading, the order being read) is not taken
 * for the pace, and smoothed over the last seconds (an exponential average), so that the slower first seconds fade
 * (issue 65: the first ETAs, from the average since the start, were about twice the real time). Undefined until a
 * count after the first item says how fast the work goes.
 */
export function rateMeter(
  startDone = 0,
  now: () => number = () => performance.now(),
): (done: number) => number | undefined {
  let last: { at: number; done: number } | undefined;
  let rate: number | undefined;
  return (done) => {
    if (done <= startDone) return undefined; // still warming up
    const at = now();
    if (!last) last = { at, done };
    else if (at > last.at && done >= last.done) {
      const recent = ((done - last.done) / (at - last.at)) * 1000;
      rate =
        rate === undefined
          ? recent
          : rate + (1 - Math.exp(-(at - last.at) / RATE_SMOOTHING_MS)) * (recent - rate);
      last = { at, done };
    }
    return rate || undefined;
  };
}
