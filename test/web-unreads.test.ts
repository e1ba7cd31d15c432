// The web client's unread counts (web/src/model/unreads.ts), run in Node:
// kept per change rather than recounted over every unread message, they must
// equal a full recount after any sequence of events (messages, reads,
// unreads, moves, deletions, muting), and a change must leave the counts of
// channels it did not touch as the same objects (views of other channels do
// not draw again).
import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import type { Message } from "../web/src/api/types.ts";
import { isTopicMuted, topicPolicyKey, useChannels } from "../web/src/model/channels.ts";
import { useMuting } from "../web/src/model/muting.ts";
import { unreadsStore, useUnreads, type UnreadCounts } from "../web/src/model/unreads.ts";

const SELF = 100;
const USERS = [101, 102, 103];
const STREAMS = [1, 2, 3];
const TOPICS = ["alpha", "Alpha", "beta", "gamma"];

type Place = { kind: "stream"; streamId: number; topic: string } | { kind: "dm"; key: string };

/** The oracle: the model's own idea of which messages are unread and mentioned, counted from scratch. */
class Reference {
  unread = new Map<number, Place>();
  mentioned = new Set<number>();

  counts(): UnreadCounts {
    const counts: UnreadCounts = { total: 0, byStream: {}, byTopic: {}, byDm: {}, dmTotal: 0, mentions: 0 };
    const channels = useChannels.getState();
    const mutedUsers = useMuting.getState().mutedUsers;
    for (const [id, place] of this.unread) {
      if (this.mentioned.has(id)) counts.mentions += 1;
      if (place.kind === "stream") {
        const topics = (counts.byTopic[place.streamId] ??= {});
        const entry = (topics[place.topic.toLowerCase()] ??= { topic: place.topic, count: 0, maxId: 0 });
        entry.count += 1;
        // Spelled as the newest unread message in it is.
        if (id > entry.maxId) [entry.maxId, entry.topic] = [id, place.topic];
        if (isTopicMuted(channels, place.streamId, place.topic)) continue;
        counts.total += 1;
        counts.byStream[place.streamId] = (counts.byStream[place.streamId] ?? 0) + 1;
      } else {
        if (place.key !== "" && place.key.split(",").every((u) => mutedUsers[Number(u)] !== undefined)) continue;
        counts.total += 1;
        counts.dmTotal += 1;
        counts.byDm[place.key] = (counts.byDm[place.key] ?? 0) + 1;
      }
    }
    return counts;
  }
}

/** A deterministic pseudo-random sequence (mulberry32), so a failure can be replayed by its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ (t + t);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function streamMessage(id: number, streamId: number, topic: string, flags: string[] = []): Message {
  return { id, type: "stream", stream_id: streamId, subject: topic, sender_id: USERS[0]!, display_recipient: `s${streamId}`, flags, content: "", timestamp: id } as unknown as Message;
}

function dmMessage(id: number, others: number[], flags: string[] = []): Message {
  const recipients = [SELF, ...others].map((u) => ({ id: u, email: `u${u}@x`, full_name: `U${u}` }));
  return { id, type: "private", sender_id: others[0] ?? SELF, display_recipient: recipients, subject: "", flags, content: "", timestamp: id } as unknown as Message;
}

function subscription(streamId: number, muted: boolean) {
  return { stream_id: streamId, name: `s${streamId}`, is_muted: muted } as never;
}

beforeEach(() => {
  useChannels.setState({ subscriptions: Object.fromEntries(STREAMS.map((s) => [s, subscription(s, false)])), topicPolicies: {} });
  useMuting.setState({ mutedUsers: {} });
  unreadsStore.load({ streams: [], pms: [], huddles: [], mentions: [], count: 0, old_unreads_missing: false } as never, SELF);
});

describe("web client: unread counts", () => {
  test("equal a full recount after 3,000 random events, with muting, moves and mentions", () => {
    for (const seed of [1, 2, 3]) {
      const next = random(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
      const ref = new Reference();
      const load = { streams: [] as { stream_id: number; topic: string; unread_message_ids: number[] }[], pms: [] as { other_user_id: number; unread_message_ids: number[] }[], huddles: [], mentions: [] as number[] };
      let id = 1;
      // A starting set from /register, as the server sends it.
      for (const streamId of STREAMS) {
        for (const topic of ["alpha", "beta"]) {
          const ids = [id++, id++, id++];
          load.streams.push({ stream_id: streamId, topic, unread_message_ids: ids });
          for (const m of ids) ref.unread.set(m, { kind: "stream", streamId, topic });
        }
      }
      const dmIds = [id++, id++];
      load.pms.push({ other_user_id: 102, unread_message_ids: dmIds });
      for (const m of dmIds) ref.unread.set(m, { kind: "dm", key: "102" });
      load.mentions.push(1, dmIds[0]!);
      ref.mentioned.add(1).add(dmIds[0]!);
      unreadsStore.load(load as never, SELF);
      assert.deepEqual(useUnreads.getState().counts, ref.counts(), `seed ${seed}: after load`);

      for (let step = 0; step < 1000; step++) {
        const unreadIds = [...ref.unread.keys()];
        const someUnread = () => (unreadIds.length ? pick(unreadIds) : 1);
        const r = next();
        let what: string;
        if (r < 0.3) {
          const mention = next() < 0.2;
          const flags = mention ? ["mentioned"] : next() < 0.1 ? ["read"] : [];
          const m = next() < 0.75 ? streamMessage(id, pick(STREAMS), pick(TOPICS), flags) : dmMessage(id, next() < 0.5 ? [pick(USERS)] : [101, 103], flags);
          what = `message ${id}`;
          unreadsStore.addMessage(m, SELF);
          if (!flags.includes("read")) {
            ref.unread.set(id, m.type === "stream" ? { kind: "stream", streamId: m.stream_id!, topic: m.subject } : { kind: "dm", key: (m.display_recipient as { id: number }[]).map((u) => u.id).filter((u) => u !== SELF).sort((a, b) => a - b).join(",") });
            if (mention) ref.mentioned.add(id);
          }
          id++;
        } else if (r < 0.5) {
          // Read a few, newest first (the case that drops a topic's newest again and again).
          const ids = [someUnread(), someUnread(), someUnread()].sort((a, b) => b - a);
          what = `read ${ids}`;
          unreadsStore.markRead(ids);
          for (const m of ids) ref.unread.delete(m), ref.mentioned.delete(m);
        } else if (r < 0.6) {
          const target = Math.max(1, Math.floor(next() * id));
          const mentioned = next() < 0.3;
          const streamId = pick(STREAMS);
          const topic = pick(TOPICS);
          what = `unread ${target}`;
          unreadsStore.markUnread({ [target]: { type: "stream", stream_id: streamId, topic, mentioned } }, SELF);
          ref.unread.set(target, { kind: "stream", streamId, topic });
          // The event says whether it mentions the user.
          if (mentioned) ref.mentioned.add(target);
          else ref.mentioned.delete(target);
        } else if (r < 0.7) {
          const ids = [someUnread(), someUnread()];
          const streamId = pick(STREAMS);
          const topic = pick(TOPICS);
          what = `move ${ids} to ${streamId}/${topic}`;
          unreadsStore.move(ids, streamId, topic);
          for (const m of ids) if (ref.unread.has(m)) ref.unread.set(m, { kind: "stream", streamId, topic });
        } else if (r < 0.75) {
          const ids = [someUnread()];
          what = `delete ${ids}`;
          unreadsStore.remove(ids);
          for (const m of ids) ref.unread.delete(m), ref.mentioned.delete(m);
        } else if (r < 0.8) {
          const ids = [someUnread()];
          const on = next() < 0.5;
          what = `mentioned ${ids} ${on}`;
          unreadsStore.setMentioned(ids, on);
          for (const m of ids) {
            if (!on) ref.mentioned.delete(m);
            else if (ref.unread.has(m)) ref.mentioned.add(m);
          }
        } else if (r < 0.87) {
          const streamId = pick(STREAMS);
          const topic = pick(TOPICS);
          const policy = pick([0, 1, 2, 3]);
          what = `topic policy ${streamId}/${topic} ${policy}`;
          useChannels.setState((s) => ({ topicPolicies: { ...s.topicPolicies, [topicPolicyKey(streamId, topic)]: policy } }));
        } else if (r < 0.92) {
          const streamId = pick(STREAMS);
          const muted = next() < 0.5;
          what = `channel ${streamId} muted ${muted}`;
          useChannels.setState((s) => ({ subscriptions: { ...s.subscriptions, [streamId]: subscription(streamId, muted) } }));
        } else if (r < 0.97) {
          const user = pick(USERS);
          what = `user ${user} muting toggled`;
          useMuting.setState((s) => {
            const mutedUsers = { ...s.mutedUsers };
            if (mutedUsers[user] !== undefined) delete mutedUsers[user];
            else mutedUsers[user] = 1;
            return { mutedUsers };
          });
        } else {
          what = "mark all read";
          unreadsStore.markAllRead();
          ref.unread.clear();
          ref.mentioned.clear();
        }
        assert.deepEqual(useUnreads.getState().counts, ref.counts(), `seed ${seed}, step ${step}: ${what}`);
        for (const m of ref.unread.keys()) assert.equal(unreadsStore.isUnread(m), true);
      }
    }
  });

  test("a change keeps the counts of the channels and conversations it did not touch", () => {
    unreadsStore.addMessage(streamMessage(1, 1, "alpha"), SELF);
    unreadsStore.addMessage(streamMessage(2, 2, "beta"), SELF);
    unreadsStore.addMessage(dmMessage(3, [102]), SELF);
    const before = useUnreads.getState();
    unreadsStore.addMessage(streamMessage(4, 1, "alpha"), SELF);
    const after = useUnreads.getState();
    assert.equal(after.version, before.version + 1);
    assert.notEqual(after.counts, before.counts);
    assert.notEqual(after.counts.byTopic[1], before.counts.byTopic[1], "the changed channel's topics are new");
    assert.equal(after.counts.byTopic[2], before.counts.byTopic[2], "another channel's topics are the same object");
    assert.deepEqual(after.counts.byTopic[1], { alpha: { topic: "alpha", count: 2, maxId: 4 } });
    assert.deepEqual([after.counts.total, after.counts.byStream[1], after.counts.byDm["102"]], [4, 2, 1]);
    // Reading what is not unread publishes nothing.
    unreadsStore.markRead([999]);
    assert.equal(useUnreads.getState(), after);
  });

  test("reading a 50,000-message topic newest first finds each next newest once per publish", () => {
    const ids = Array.from({ length: 50_000 }, (_, i) => i + 1);
    unreadsStore.load({ streams: [{ stream_id: 1, topic: "big", unread_message_ids: ids }], pms: [], huddles: [], mentions: [] } as never, SELF);
    unreadsStore.markRead(ids.slice(25_000).reverse());
    assert.deepEqual(useUnreads.getState().counts.byTopic[1], { big: { topic: "big", count: 25_000, maxId: 25_000 } });
    assert.equal(useUnreads.getState().counts.total, 25_000);
  });
});
