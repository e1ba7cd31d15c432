// Notifications per channel (Zulip's "Notification settings" table of
// channels: desktop, sound, mobile, email, @all mentions) with each
// channel's colour and pin, and your topics' visibility policies (followed,
// unmuted, muted) to change or drop. Saved through POST
// /users/me/subscriptions/properties and POST /user_topics; the tables show
// what the subscription and user_topic events then say.
import { api } from "../../api/client.ts";
import type { Subscription } from "../../api/types.ts";
import { t } from "../../i18n.ts";
import { channelName, channelsStore, useChannels } from "../../model/channels.ts";
import { useOrganization, VISIBILITY } from "../../model/organization.ts";
import { topicDisplayName } from "../../model/realm.ts";
import { useSettings } from "../../model/settings.ts";
import { AdminTable, saved, Section, useStatus } from "./shared.tsx";

/** Subscription property → the user setting it falls back to when null (Zulip's notification_settings_null). */
const COLUMNS: [property: string, fallback: string, label: () => string][] = [
  ["desktop_notifications", "enable_stream_desktop_notifications", () => t("Desktop")],
  ["audible_notifications", "enable_stream_audible_notifications", () => t("Sound")],
  ["push_notifications", "enable_stream_push_notifications", () => t("Mobile")],
  ["email_notifications", "enable_stream_email_notifications", () => t("Email")],
  ["wildcard_mentions_notify", "wildcard_mentions_notify", () => t("@all mentions")],
];

/** Shows the new value at once; the subscription event confirms it, a failure puts the old one back. */
async function setProperty(streamId: number, property: string, value: unknown): Promise<void> {
  const old = (useChannels.getState().subscriptions[streamId] as unknown as Record<string, unknown> | undefined)?.[property];
  channelsStore.updateSubscription(streamId, property, value);
  try {
    await api.post("/users/me/subscriptions/properties", { subscription_data: [{ stream_id: streamId, property, value }] });
  } catch (e) {
    channelsStore.updateSubscription(streamId, property, old);
    throw e;
  }
}

/** One of a channel's properties as a field in its row; saving says `label` (by default the field's name). */
function PropertyCell({ type, name, label = name, value, onSet }: { type: "checkbox" | "color"; name: string; label?: string; value: boolean | string; onSet: (label: string, value: boolean | string) => void }) {
  return (
    <td>
      {type === "checkbox" ? (
        <input type="checkbox" aria-label={name} checked={value === true} onChange={(e) => onSet(label, e.target.checked)} />
      ) : (
        <input type="color" aria-label={name} value={String(value)} onChange={(e) => onSet(label, e.target.value)} />
      )}
    </td>
  );
}

export function ChannelNotifications() {
  const subscriptions = useChannels((s) => s.subscriptions);
  const settings = useSettings((s) => s.settings);
  const status = useStatus();
  const channels = Object.values(subscriptions)
    .filter((s) => !s.is_archived)
    .sort((a, b) => Number(b.pin_to_top) - Number(a.pin_to_top) || a.name.localeCompare(b.name));
  const setter = (sub: Subscription, property: string) => (label: string, value: unknown) => void status.run(saved(label), () => setProperty(sub.stream_id, property, value));
  return (
    <Section id="channel-notifications" title={t("Channel notifications and colours")}>
      {channels.length === 0 ? (
        <p className="muted-text">{t("You are not subscribed to any channel.")}</p>
      ) : (
        <AdminTable label={t("Channel notification settings")} className="channel-settings" columns={[t("Channel"), ...COLUMNS.map(([, , label]) => label()), t("Colour"), t("Pinned")]}>
          {channels.map((sub) => {
            const raw = sub as unknown as Record<string, unknown>;
            return (
              <tr key={sub.stream_id}>
                <th scope="row">
                  <span className="channel-swatch" style={{ background: sub.color }} aria-hidden="true" />
                  {sub.name}
                </th>
                {COLUMNS.map(([property, fallback, label]) => {
                  const value = raw[property];
                  return (
                    <PropertyCell
                      key={property}
                      type="checkbox"
                      name={t("{{kind}} notifications for #{{channel}}", { kind: label(), channel: sub.name })}
                      label={`#${sub.name} ${label()}`}
                      value={typeof value === "boolean" ? value : settings[fallback] === true}
                      onSet={setter(sub, property)}
                    />
                  );
                })}
                <PropertyCell type="color" name={t("Colour of #{{channel}}", { channel: sub.name })} value={/^#[0-9a-f]{6}$/i.test(sub.color) ? sub.color : "#76ce90"} onSet={setter(sub, "color")} />
                <PropertyCell type="checkbox" name={t("Pin #{{channel}} to the top", { channel: sub.name })} value={sub.pin_to_top} onSet={setter(sub, "pin_to_top")} />
              </tr>
            );
          })}
        </AdminTable>
      )}
      {status.status}
    </Section>
  );
}

function policyLabel(policy: number): string {
  switch (policy) {
    case VISIBILITY.followed:
      return t("Followed");
    case VISIBILITY.unmuted:
      return t("Unmuted");
    case VISIBILITY.muted:
      return t("Muted");
    default:
      return t("Default");
  }
}

/** Your followed, unmuted and muted topics (Zulip's "Topic settings"), newest change first. */
export function TopicSettings() {
  const policies = useOrganization((s) => s.topicPolicies);
  useChannels((s) => s.subscriptions);
  const status = useStatus();
  const rows = [...policies].sort((a, b) => b.last_updated - a.last_updated);
  return (
    <Section id="topic-settings" title={t("Topic settings")}>
      {rows.length === 0 ? (
        <p className="muted-text">{t("You have not followed, unmuted or muted any topic.")}</p>
      ) : (
        <AdminTable label={t("Topic settings")} columns={[t("Channel"), t("Topic"), t("Status")]}>
          {rows.map((p) => {
            const where = `#${channelName(p.stream_id) ?? t("unknown channel")} > ${topicDisplayName(p.topic_name)}`;
            return (
              <tr key={`${p.stream_id}:${p.topic_name}`}>
                <td>{channelName(p.stream_id) ?? t("unknown channel")}</td>
                <td>{topicDisplayName(p.topic_name)}</td>
                <td>
                  <select
                    aria-label={t("Visibility of {{topic}}", { topic: where })}
                    value={p.visibility_policy}
                    onChange={(e) =>
                      void status.run(saved(where), () => api.post("/user_topics", { stream_id: p.stream_id, topic: p.topic_name, visibility_policy: Number(e.target.value) }))
                    }
                  >
                    {[VISIBILITY.followed, VISIBILITY.unmuted, VISIBILITY.muted, VISIBILITY.none].map((v) => (
                      <option key={v} value={v}>
                        {policyLabel(v)}
                      </option>
                    ))}
                  </select>
                </td>
              </tr>
            );
          })}
        </AdminTable>
      )}
      {status.status}
    </Section>
  );
}
