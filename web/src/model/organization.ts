// What the settings and administration pages show beyond the other stores:
// linkifiers, code playgrounds, bots, default channels and your topics'
// visibility policies, from /register and kept current by their events
// (realm_linkifiers, realm_playgrounds, realm_bot, default_streams,
// user_topic). Custom profile fields are in profile-fields.ts.
import { create } from "zustand";
import type { RegisterResponse } from "../api/types.ts";

export interface Linkifier {
  id: number;
  pattern: string;
  url_template: string;
}

export interface Playground {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

export interface Bot {
  user_id: number;
  email: string;
  full_name: string;
  bot_type: number;
  is_active: boolean;
  api_key?: string;
  avatar_url?: string;
  owner_id?: number;
}

export interface TopicPolicy {
  stream_id: number;
  topic_name: string;
  visibility_policy: number;
  last_updated: number;
}

export interface OrganizationState {
  linkifiers: Linkifier[];
  playgrounds: Playground[];
  bots: Record<number, Bot>;
  defaultChannelIds: number[];
  topicPolicies: TopicPolicy[];
}

export const useOrganization = create<OrganizationState>(() => ({ linkifiers: [], playgrounds: [], bots: {}, defaultChannelIds: [], topicPolicies: [] }));

/** Zulip's topic visibility policies. */
export const VISIBILITY = { none: 0, muted: 1, unmuted: 2, followed: 3 } as const;

function idsOf(list: unknown): number[] {
  return ((list as (number | { stream_id: number })[] | undefined) ?? []).map((x) => (typeof x === "number" ? x : x.stream_id));
}

export const organizationStore = {
  load(initial: RegisterResponse): void {
    const raw = initial as unknown as Record<string, unknown>;
    useOrganization.setState({
      linkifiers: (raw.realm_linkifiers as Linkifier[] | undefined) ?? [],
      playgrounds: (raw.realm_playgrounds as Playground[] | undefined) ?? [],
      bots: Object.fromEntries(((raw.realm_bots as Bot[] | undefined) ?? []).map((b) => [b.user_id, b])),
      defaultChannelIds: idsOf(raw.realm_default_streams),
      topicPolicies: ((raw.user_topics as TopicPolicy[] | undefined) ?? []).filter((p) => p.visibility_policy !== VISIBILITY.none),
    });
  },

  applyEvent(event: { type: string; op?: string; [key: string]: any }): void {
    switch (event.type) {
      case "realm_linkifiers":
        useOrganization.setState({ linkifiers: event.realm_linkifiers ?? [] });
        break;
      case "realm_playgrounds":
        useOrganization.setState({ playgrounds: event.realm_playgrounds ?? [] });
        break;
      case "default_streams":
        useOrganization.setState({ defaultChannelIds: idsOf(event.default_streams) });
        break;
      case "realm_bot":
        this.applyBot(event.op ?? "", event.bot ?? {});
        break;
      case "user_topic":
        this.applyTopic(event as unknown as TopicPolicy);
        break;
    }
  },

  applyBot(op: string, bot: Partial<Bot> & { user_id: number }): void {
    useOrganization.setState((s) => {
      const bots = { ...s.bots };
      const current = bots[bot.user_id];
      if (op === "add") bots[bot.user_id] = bot as Bot;
      else if (op === "delete") delete bots[bot.user_id];
      else if (op === "remove") {
        if (current) bots[bot.user_id] = { ...current, is_active: false };
      } else if (op === "update" && current) bots[bot.user_id] = { ...current, ...bot };
      else return s;
      return { bots };
    });
  },

  applyTopic(policy: TopicPolicy): void {
    useOrganization.setState((s) => {
      const rest = s.topicPolicies.filter((p) => !(p.stream_id === policy.stream_id && p.topic_name.toLowerCase() === policy.topic_name.toLowerCase()));
      return { topicPolicies: policy.visibility_policy === VISIBILITY.none ? rest : [...rest, policy] };
    });
  },
};
