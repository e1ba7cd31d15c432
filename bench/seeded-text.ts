// What the benches seed their histories with: a seeded generator and the
// common words of chat text, so every run stores the same messages.

/** mulberry32: a small seeded generator, so every run stores the same history. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const COMMON_WORDS = (
  "the a to and of in is it that for on with this we be not are have can you i was at but if from so as by they or do " +
  "will just about what when there should one all how think need more up out build test deploy fix issue release server " +
  "client error config cache database query index log merge branch review change update version patch bug crash timeout " +
  "latency memory disk network request response user team meeting today tomorrow week sprint plan design spec doc draft " +
  "looks good thanks please check again works broken failing passing green red flaky slow fast rollback migration schema " +
  "backup restore alert page oncall incident ticket customer feature flag experiment metric dashboard graph chart api " +
  "endpoint token key auth login session queue worker job cron batch stream event topic channel message thread reply"
).split(" ");
