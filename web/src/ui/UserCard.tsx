// The user card (Zulip's user popover): opened from a sender's name or
// avatar, or a name in the user list. A dialog named by the person's full
// name: avatar, name, whether they are here, role, status, local time, email
// where the viewer may see it, custom profile fields, and buttons to write to
// them and to see what they wrote. Escape or a click elsewhere closes it; the
// focus goes back to where the card was opened from.
import { useEffect, useMemo, useRef, useState, type MouseEvent } from "react";
import type { User } from "../api/types.ts";
import { t, useLanguage } from "../i18n.ts";
import { availability, useAvailabilityFacts, type Availability } from "../model/availability.ts";
import { requestCompose } from "../model/compose-requests.ts";
import { navigate } from "../model/navigation.ts";
import { narrowKey, type Narrow } from "../model/narrow.ts";
import { externalAccountUrl, FIELD_TYPE, selectOptionText, useProfileFields, type ProfileField } from "../model/profile-fields.ts";
import { userCard, useUserCard } from "../model/user-card.ts";
import { useUserStatus } from "../model/user-status.ts";
import { realEmail, useUsers } from "../model/users.ts";
import { Avatar } from "./Avatar.tsx";
import { Popover } from "./Popover.tsx";
import { prepareHtml } from "./rendered.ts";
import { StatusEmoji } from "./StatusEmoji.tsx";
import { openStatusDialog } from "../model/status-dialog.ts";

export function availabilityLabel(a: Availability): string {
  return a === "active" ? t("Active") : a === "idle" ? t("Idle") : t("Offline");
}

/** Owner, Administrator, Moderator, Member, Guest, or Bot: in the interface's language. */
export function personRole(user: User): string {
  if (user.is_bot) return t("Bot");
  switch (user.role) {
    case 100:
      return t("Owner");
    case 200:
      return t("Administrator");
    case 300:
      return t("Moderator");
    case 600:
      return t("Guest");
    default:
      return t("Member");
  }
}

/** The time now where they are, in the viewer's language and 12/24-hour setting; null without a (valid) time zone. */
function localTime(timeZone: string | undefined, language: string, twentyFourHour: boolean): string | null {
  if (!timeZone) return null;
  try {
    return new Intl.DateTimeFormat(language, { hour: "numeric", minute: "2-digit", hour12: !twentyFourHour, timeZone }).format(new Date());
  } catch {
    return null;
  }
}

function FieldValue({ field, value, rendered }: { field: ProfileField; value: string; rendered: string | undefined }) {
  const selfId = useUsers((s) => s.selfId);
  const byId = useUsers((s) => s.byId);
  const language = useLanguage((s) => s.language);
  switch (field.type) {
    case FIELD_TYPE.SELECT:
      return <>{selectOptionText(field.field_data, value)}</>;
    case FIELD_TYPE.DATE: {
      const date = new Date(`${value}T00:00:00Z`);
      if (Number.isNaN(date.getTime())) return <>{value}</>;
      return <>{new Intl.DateTimeFormat(language, { dateStyle: "medium", timeZone: "UTC" }).format(date)}</>;
    }
    case FIELD_TYPE.URL:
      return /^https?:\/\//i.test(value) ? (
        <a href={value} target="_blank" rel="noopener noreferrer">
          {value}
        </a>
      ) : (
        <>{value}</>
      );
    case FIELD_TYPE.USER: {
      let ids: number[] = [];
      try {
        ids = (JSON.parse(value) as unknown[]).filter((x): x is number => typeof x === "number");
      } catch {
        return <>{value}</>;
      }
      return (
        <ul className="user-card-people">
          {ids.map((id) => (
            <li key={id}>
              <button type="button" className="link-button" onClick={(e) => userCard.toggle(id, e.currentTarget)}>
                {byId[id]?.full_name ?? t("Unknown user")}
              </button>
            </li>
          ))}
        </ul>
      );
    }
    case FIELD_TYPE.EXTERNAL_ACCOUNT: {
      const url = externalAccountUrl(field.field_data, value);
      return url ? (
        <a href={url} target="_blank" rel="noopener noreferrer">
          {value}
        </a>
      ) : (
        <>{value}</>
      );
    }
    default:
      // Short and long text, pronouns: the server's rendering where it made one (Markdown), else the text.
      return rendered ? <div className="rendered_markdown" dangerouslySetInnerHTML={{ __html: prepareHtml(rendered, selfId, false) }} /> : <>{value}</>;
  }
}

function Card({ user, anchor }: { user: User; anchor: HTMLElement }) {
  const facts = useAvailabilityFacts();
  const status = useUserStatus((s) => s.byUser[user.user_id]);
  const fields = useProfileFields((s) => s.fields);
  const byId = useUsers((s) => s.byId);
  const { language, twentyFourHour } = useLanguage();
  const isSelf = user.user_id === facts.selfId;
  const here = availability(user.user_id, facts);
  const time = useMemo(() => localTime(user.timezone, language, twentyFourHour), [user.timezone, language, twentyFourHour, facts.now]);
  const firstButton = useRef<HTMLButtonElement>(null);
  const [, rerender] = useState(0);
  // The local time moves on while the card is open.
  useEffect(() => {
    const timer = setInterval(() => rerender((n) => n + 1), 30_000);
    return () => clearInterval(timer);
  }, []);
  useEffect(() => firstButton.current?.focus({ preventScroll: true }), []);
  const shownFields = fields.filter((f) => user.profile_data?.[String(f.id)]?.value);
  // Only a real address: the fake user{id}@… one says nothing to a person.
  const email = realEmail(user);

  const dmNarrow: Narrow = { kind: "dm", userIds: [user.user_id] };
  const sendDm = () => {
    userCard.close();
    navigate({ kind: "messages", narrow: dmNarrow });
    requestCompose({ key: narrowKey(dmNarrow), focus: "message" });
  };
  const viewMessages = () => {
    userCard.close();
    navigate({ kind: "messages", narrow: { kind: "search", query: `sender:${user.email}` } });
  };

  return (
    <Popover anchor={anchor} onClose={() => userCard.close()} label={user.full_name} role="dialog" className="user-card">
      <div className="user-card-head">
        <Avatar url={user.avatar_url} name={user.full_name} />
        <div className="user-card-who">
          <h2 className="user-card-name">
            <span className={`presence-dot ${here}`} role="img" aria-label={availabilityLabel(here)} title={availabilityLabel(here)} />
            {user.full_name}
            {isSelf && <span className="muted-text"> {t("(you)")}</span>}
          </h2>
          <p className="user-card-role">{personRole(user)}</p>
          {!user.is_active && <p className="user-card-role">{t("This user has been deactivated.")}</p>}
        </div>
      </div>
      {(status?.emoji_name || status?.status_text) && (
        <p className="user-card-status">
          <StatusEmoji status={status} /> {status.status_text}
        </p>
      )}
      <dl className="user-card-facts">
        {email && (
          <>
            <dt>{t("Email")}</dt>
            <dd>
              <a href={`mailto:${email}`}>{email}</a>
            </dd>
          </>
        )}
        {user.is_bot && user.bot_owner_id && (
          <>
            <dt>{t("Owner")}</dt>
            <dd>
              <button type="button" className="link-button" onClick={(e) => userCard.toggle(user.bot_owner_id!, e.currentTarget)}>
                {byId[user.bot_owner_id]?.full_name ?? t("Unknown user")}
              </button>
            </dd>
          </>
        )}
        {time && (
          <>
            <dt>{t("Local time")}</dt>
            <dd>{time}</dd>
          </>
        )}
        {shownFields.map((field) => {
          const data = user.profile_data![String(field.id)]!;
          return (
            <div key={field.id} className="user-card-field">
              <dt>{field.name}</dt>
              <dd>
                <FieldValue field={field} value={data.value} rendered={data.rendered_value} />
              </dd>
            </div>
          );
        })}
      </dl>
      <div className="user-card-actions">
        {user.is_active && (
          <button type="button" ref={firstButton} onClick={sendDm}>
            {t("Send direct message")}
          </button>
        )}
        <button type="button" ref={user.is_active ? undefined : firstButton} onClick={viewMessages}>
          {t("View messages")}
        </button>
        {isSelf && (
          <button
            type="button"
            onClick={() => {
              userCard.close();
              openStatusDialog();
            }}
          >
            {status?.emoji_name || status?.status_text ? t("Edit status") : t("Set status")}
          </button>
        )}
      </div>
    </Popover>
  );
}

/** A click on a message's sender name or avatar: their card, without also selecting the message under it. */
export function openSenderCard(e: MouseEvent<HTMLElement>, senderId: number): void {
  e.stopPropagation();
  userCard.toggle(senderId, e.currentTarget);
}

/** The open user card, if any (one at a time, drawn over everything). */
export function UserCardHost() {
  const { userId, anchor } = useUserCard();
  // A mention of someone in a message opens their card, as in Zulip.
  useEffect(() => {
    const onClick = (e: globalThis.MouseEvent) => {
      const mention = (e.target as HTMLElement).closest?.<HTMLElement>(".rendered_markdown .user-mention[data-user-id]");
      const id = Number(mention?.dataset.userId);
      if (!mention || !Number.isInteger(id) || !useUsers.getState().byId[id] || e.button !== 0) return;
      e.preventDefault();
      e.stopPropagation();
      userCard.toggle(id, mention);
    };
    document.addEventListener("click", onClick, true);
    return () => document.removeEventListener("click", onClick, true);
  }, []);
  const user = useUsers((s) => (userId === null ? undefined : s.byId[userId]));
  if (!user || !anchor) return null;
  return <Card key={`${user.user_id}`} user={user} anchor={anchor} />;
}
