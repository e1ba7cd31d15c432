// The topic's muting and following menu in its recipient header, as Zulip's
// recipient bar offers: follow or unfollow the topic, mute or unmute it
// (POST /user_topics visibility_policy), and mute or unmute the channel
// (the subscription's is_muted).
import { useRef, useState, type KeyboardEvent } from "react";
import { t } from "../i18n.ts";
import { topicPolicyKey, useChannels } from "../model/channels.ts";
import { setChannelMuted, setTopicPolicy, VisibilityPolicy } from "../model/muting.ts";
import { Popover } from "./Popover.tsx";

interface Item {
  label: string;
  act: () => Promise<unknown>;
}

export function TopicMenu({ streamId, topic }: { streamId: number; topic: string }) {
  const policy = useChannels((s) => s.topicPolicies[topicPolicyKey(streamId, topic)] ?? VisibilityPolicy.INHERIT);
  const sub = useChannels((s) => s.subscriptions[streamId]);
  const [anchor, setAnchor] = useState<HTMLElement | null>(null);
  const [error, setError] = useState<string | null>(null);
  const menuRef = useRef<HTMLDivElement>(null);
  if (!sub) return null;
  const channelMuted = sub.is_muted;
  const topicMuted = policy === VisibilityPolicy.MUTED || (channelMuted && policy === VisibilityPolicy.INHERIT);
  const items: Item[] = [];
  if (policy === VisibilityPolicy.FOLLOWED) items.push({ label: t("Unfollow topic"), act: () => setTopicPolicy(streamId, topic, VisibilityPolicy.INHERIT) });
  else items.push({ label: t("Follow topic"), act: () => setTopicPolicy(streamId, topic, VisibilityPolicy.FOLLOWED) });
  // In a muted channel, unmuting a topic makes it UNMUTED; elsewhere it goes back to the channel's default.
  if (topicMuted) items.push({ label: t("Unmute topic"), act: () => setTopicPolicy(streamId, topic, channelMuted ? VisibilityPolicy.UNMUTED : VisibilityPolicy.INHERIT) });
  else items.push({ label: t("Mute topic"), act: () => setTopicPolicy(streamId, topic, VisibilityPolicy.MUTED) });
  items.push(channelMuted ? { label: t("Unmute channel"), act: () => setChannelMuted(streamId, false) } : { label: t("Mute channel"), act: () => setChannelMuted(streamId, true) });

  const close = (focusButton = true) => {
    const button = anchor;
    setAnchor(null);
    if (focusButton) requestAnimationFrame(() => button?.focus());
  };
  const onKey = (e: KeyboardEvent) => {
    const list = [...(menuRef.current?.querySelectorAll<HTMLButtonElement>("[role=menuitem]") ?? [])];
    const index = list.indexOf(document.activeElement as HTMLButtonElement);
    const move = (i: number) => list[(i + list.length) % list.length]?.focus();
    if (e.key === "ArrowDown") move(index + 1);
    else if (e.key === "ArrowUp") move(index - 1);
    else if (e.key === "Tab") close(false);
    else return;
    if (e.key !== "Tab") e.preventDefault();
  };
  const glyph = policy === VisibilityPolicy.FOLLOWED ? "🔔" : topicMuted ? "🔕" : "▾";
  const state = policy === VisibilityPolicy.FOLLOWED ? t("Followed") : topicMuted ? t("Muted") : null;
  return (
    <>
      <button
        type="button"
        className={`topic-menu-button${policy === VisibilityPolicy.FOLLOWED ? " followed" : ""}${topicMuted ? " muted" : ""}`}
        aria-label={t("Topic options")}
        aria-haspopup="menu"
        aria-expanded={anchor !== null}
        title={state ?? t("Topic options")}
        onClick={(e) => {
          const target = e.currentTarget;
          setError(null);
          setAnchor(anchor ? null : target);
          requestAnimationFrame(() => menuRef.current?.querySelector<HTMLButtonElement>("[role=menuitem]")?.focus());
        }}
      >
        <span aria-hidden="true">{glyph}</span>
      </button>
      {state && <span className="topic-state">{state}</span>}
      {error && (
        <span className="topic-error" role="alert">
          {error}
        </span>
      )}
      {anchor && (
        <Popover anchor={anchor} onClose={() => close()} label={t("Topic options")} className="actions-popover">
          <div className="menu actions-menu" role="menu" aria-label={t("Topic options")} ref={menuRef} onKeyDown={onKey}>
            {items.map((item) => (
              <button
                key={item.label}
                type="button"
                role="menuitem"
                onClick={() => {
                  close();
                  item.act().catch((err: Error) => setError(err.message));
                }}
              >
                {item.label}
              </button>
            ))}
          </div>
        </Popover>
      )}
    </>
  );
}
