// The web client's unread counts with a large backlog: the time the unreads
// store (web/src/model/unreads.ts, run in Node) takes per event — a new
// message, a message read — for an account with --unreads unread messages,
// against the full recount the store did before (every unread message
// counted again on each change; kept here as the yardstick), in one run.
//
// Usage: node --import tsx bench/web-unreads.ts [--unreads 50000 --events 2000]
import os from "node:os";
import { parseArgs } from "node:util";
import type { Message } from "../web/src/api/types.ts";
import { isTopicMuted, useChannels } from "../web/src/model/channels.ts";
import { unreadsStore } from "../web/src/model/unreads.ts";

const { values } = parseArgs({ options: { unreads: { type: "string", default: "50000" }, events: { type: "string", default: "2000" } } });
const UNREADS = Number(values.unreads);
const EVENTS = Number(values.events);
const STREAMS = 20;
const TOPICS_PER_STREAM = 50;
const SELF = 1;

/** The backlog: unread messages spread over 20 channels × 50 topics, a tenth of them direct messages from 100 people. */
function backlog() {
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const pms = new Map<number, { other_user_id: number; unread_message_ids: number[] }>();
  for (let id = 1; id <= UNREADS; id++) {
    if (id % 10 === 0) {
      const other = 2 + (id % 100);
      if (!pms.has(other)) pms.set(other, { other_user_id: other, unread_message_ids: [] });
      pms.get(other)!.unread_message_ids.push(id);
      continue;
    }
    const streamId = 1 + (id % STREAMS);
    const topic = `topic ${id % TOPICS_PER_STREAM}`;
    const key = `${streamId}:${topic}`;
    if (!streams.has(key)) streams.set(key, { stream_id: streamId, topic, unread_message_ids: [] });
    streams.get(key)!.unread_message_ids.push(id);
  }
  return { streams: [...streams.values()], pms: [...pms.values()], huddles: [], mentions: [], count: UNREADS, old_unreads_missing: false };
}

function message(id: number): Message {
  return { id, type: "stream", stream_id: 1 + (id % STREAMS), subject: `topic ${id % TOPICS_PER_STREAM}`, sender_id: 2, display_recipient: "", flags: [], content: "", timestamp: id } as unknown as Message;
}

/** The yardstick: the store's counting before this change, over a plain map of every unread message. */
function fullRecount(locations: Map<number, { streamId: number; topic: string } | { key: string }>): number {
  const channels = useChannels.getState();
  const byTopic: Record<number, Record<string, { topic: string; count: number; maxId: number }>> = {};
  const byStream: Record<number, number> = {};
  let total = 0;
  for (const [id, loc] of locations) {
    if ("streamId" in loc) {
      const topics = (byTopic[loc.streamId] ??= {});
      const entry = (topics[loc.topic.toLowerCase()] ??= { topic: loc.topic, count: 0, maxId: 0 });
      entry.count += 1;
      entry.maxId = Math.max(entry.maxId, id);
      if (isTopicMuted(channels, loc.streamId, loc.topic)) continue;
      byStream[loc.streamId] = (byStream[loc.streamId] ?? 0) + 1;
    }
    total += 1;
  }
  return total;
}

function timePerEvent(run: (i: number) => void): number {
  for (let i = 0; i < 20; i++) run(i); // warm-up
  const started = performance.now();
  for (let i = 20; i < EVENTS + 20; i++) run(i);
  return ((performance.now() - started) * 1000) / EVENTS;
}

useChannels.setState({ subscriptions: Object.fromEntries(Array.from({ length: STREAMS }, (_, i) => [i + 1, { stream_id: i + 1, name: `s${i + 1}`, is_muted: false }])) as never, topicPolicies: {} });

// The store as it is.
unreadsStore.load(backlog() as never, SELF);
const storeAdd = timePerEvent((i) => unreadsStore.addMessage(message(UNREADS + i + 1), SELF));
const storeRead = timePerEvent((i) => unreadsStore.markRead([i * 7 + 1]));

// The yardstick: the same events, each followed by a full recount.
const locations = new Map<number, { streamId: number; topic: string } | { key: string }>();
for (const s of backlog().streams) for (const id of s.unread_message_ids) locations.set(id, { streamId: s.stream_id, topic: s.topic });
for (const p of backlog().pms) for (const id of p.unread_message_ids) locations.set(id, { key: String(p.other_user_id) });
const recountAdd = timePerEvent((i) => {
  const m = message(UNREADS + i + 1);
  locations.set(m.id, { streamId: m.stream_id!, topic: m.subject });
  fullRecount(locations);
});
const recountRead = timePerEvent((i) => {
  locations.delete(i * 7 + 1);
  fullRecount(locations);
});

console.log(`${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}; load average ${os.loadavg()[0]!.toFixed(1)}`);
console.log(`${UNREADS} unread messages, ${EVENTS} events of each kind; µs per event (store ÷ full recount)`);
console.log(`| event | store | full recount (before) | ratio |`);
console.log(`|---|---|---|---|`);
console.log(`| a new message | ${storeAdd.toFixed(1)} | ${recountAdd.toFixed(1)} | ${(storeAdd / recountAdd).toFixed(3)} |`);
console.log(`| a message read | ${storeRead.toFixed(1)} | ${recountRead.toFixed(1)} | ${(storeRead / recountRead).toFixed(3)} |`);
