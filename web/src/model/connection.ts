// The link to the server's event system: POST /register fills every store,
// then GET /events is long-polled and each event applied. When the queue is
// gone (BAD_EVENT_QUEUE_ID: expired, or the server restarted) the client
// registers again, which reloads the stores and refetches the open narrow;
// while the server cannot be reached the page says it is reconnecting.
import { mutingStore } from "./muting.ts";
import { playgroundsStore } from "./playgrounds.ts";
import { create } from "zustand";
import { api, ApiError } from "../api/client.ts";
import type { RegisterResponse, ServerEvent } from "../api/types.ts";
import { channelsStore } from "./channels.ts";
import { emojiStore } from "./emoji.ts";
import { allChannelsStore } from "./all-channels.ts";
import { channelFoldersStore } from "./channel-folders.ts";
import { settingsStore } from "./settings.ts";
import { userStatusStore } from "./user-status.ts";
import { widgetsStore } from "./widgets.ts";
import { recentStore } from "./recent.ts";
import { dmConversationsStore } from "./dm-conversations.ts";
import { organizationStore } from "./organization.ts";
import { draftsStore } from "./drafts.ts";
import { scheduledStore } from "./scheduled.ts";
import { snippetsStore } from "./snippets.ts";
import { applyEvent } from "./events.ts";
import { messagesStore } from "./messages.ts";
import { permissionsStore } from "./permissions.ts";
import { locationView, readLocation, useNavigation } from "./navigation.ts";
import { onLogOut, useSession } from "./session.ts";
import { presenceStore } from "./presence.ts";
import { profileFieldsStore } from "./profile-fields.ts";
import { reading } from "./reading.ts";
import { realmStore } from "./realm.ts";
import { topicsStore } from "./topics.ts";
import { typingStore } from "./typing.ts";
import { unreadsStore } from "./unreads.ts";
import { usersStore, useUsers } from "./users.ts";

export interface ConnectionState {
  status: "connecting" | "live" | "reconnecting" | "stopped";
  queueId: string | null;
  /** Registered at least once: the stores hold data. */
  loaded: boolean;
}

export const useConnection = create<ConnectionState>(() => ({ status: "connecting", queueId: null, loaded: false }));

const CAPABILITIES = {
  notification_settings_null: true,
  bulk_message_deletion: true,
  user_avatar_url_field_optional: false,
  stream_typing_notifications: true,
  user_settings_object: true,
  empty_topic_name: true,
  simplified_presence_events: true,
  linkifier_url_template: true,
};

let run = 0;
let abort: AbortController | null = null;
let presenceTimer: ReturnType<typeof setInterval> | null = null;

/** Ends the current wait between reconnection attempts early (the tab came back, the network returned). */
let wakeUp: (() => void) | null = null;

/** Waits `ms`, or less when wake() is called meanwhile. */
function backoff(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      if (wakeUp === done) wakeUp = null;
      resolve();
    }
    wakeUp = done;
  });
}

/** The tab is shown or focused again, or the browser is back online: a waiting reconnection tries at once. */
function wake(): void {
  if (document.visibilityState === "hidden") return;
  wakeUp?.();
}

if (typeof window !== "undefined") {
  window.addEventListener("online", wake);
  window.addEventListener("focus", wake);
  document.addEventListener("visibilitychange", wake);
}

async function register(): Promise<RegisterResponse> {
  return api.post<RegisterResponse>("/register", {
    apply_markdown: true,
    client_gravatar: false,
    slim_presence: true,
    include_subscribers: false,
    client_capabilities: CAPABILITIES,
  });
}

/** Fills every store from a registration; resolves when the open narrow's first page is in. */
function load(initial: RegisterResponse): Promise<void> {
  usersStore.load(initial);
  realmStore.load(initial);
  permissionsStore.load(initial);
  organizationStore.load(initial);
  channelsStore.load(initial);
  mutingStore.load(initial.muted_users);
  playgroundsStore.load(initial.realm_playgrounds);
  unreadsStore.load(initial.unread_msgs, initial.user_id);
  dmConversationsStore.load(initial.recent_private_conversations, initial.user_id);
  recentStore.reset(initial.user_id);
  presenceStore.load(initial.presences);
  emojiStore.load(initial.server_emoji_data_url, initial.realm_emoji);
  settingsStore.load(initial.user_settings);
  userStatusStore.load(initial.user_status);
  scheduledStore.load(initial.scheduled_messages, initial.reminders);
  snippetsStore.load(initial.saved_snippets);
  draftsStore.load(initial.drafts);
  profileFieldsStore.load(initial.custom_profile_fields);
  allChannelsStore.reset();
  channelFoldersStore.load(initial.channel_folders);
  typingStore.reset();
  reading.reset();
  topicsStore.reset();
  messagesStore.reset();
  useConnection.setState({ queueId: initial.queue_id, loaded: true });
  readLocation();
  widgetsStore.reset();
  const view = useNavigation.getState().view;
  const opened = view.kind === "messages" ? messagesStore.open(view.narrow, true, view.near) : Promise.resolve();
  // A page asked for beside /register for another view (the reader moved on) is not kept for later.
  messagesStore.discardPrefetch();
  return opened;
}

/** The open narrow's first page, asked for beside POST /register rather than after it. */
function prefetchOpenNarrow(): void {
  const selfId = useUsers.getState().selfId || useSession.getState().user?.user_id;
  if (!selfId) return;
  const view = locationView(selfId);
  if (view.kind === "messages") messagesStore.prefetch(view.narrow, view.near);
}

async function reportPresence(): Promise<void> {
  try {
    await api.post("/users/me/presence", { status: document.visibilityState === "visible" ? "active" : "idle", new_user_input: true, slim_presence: true });
  } catch {
    // The next ping tries again; the poll loop shows connection trouble.
  }
}

async function loop(myRun: number): Promise<void> {
  let queueId: string | null = null;
  let lastEventId = -1;
  let failures = 0;
  while (myRun === run) {
    try {
      if (queueId === null) {
        prefetchOpenNarrow();
        const initial = await register();
        if (myRun !== run) return;
        queueId = initial.queue_id;
        lastEventId = initial.last_event_id;
        const opened = load(initial);
        // The first presence report waits for the first page: on one server thread it would queue ahead of it.
        if (presenceTimer === null) void opened.finally(() => startPresence(myRun));
      }
      abort = new AbortController();
      // After a failure the first poll answers at once (dont_block), so the page knows it is back without
      // waiting for the next event; then it waits for events again.
      const reply = await api.get<{ events: ServerEvent[] }>(
        "/events",
        { queue_id: queueId, last_event_id: lastEventId, ...(failures > 0 ? { dont_block: true } : {}) },
        { signal: abort.signal },
      );
      if (myRun !== run) return;
      failures = 0;
      useConnection.setState({ status: "live" });
      for (const event of reply.events) {
        lastEventId = Math.max(lastEventId, event.id);
        try {
          applyEvent(event);
        } catch (error) {
          console.error("applying event", event, error);
        }
      }
    } catch (error) {
      if (myRun !== run) return;
      if (error instanceof ApiError && error.status === 401) {
        // Signed out: a sign-in starts a new loop.
        running = false;
        useConnection.setState({ status: "stopped" });
        return;
      }
      if (error instanceof ApiError && error.code === "BAD_EVENT_QUEUE_ID") {
        queueId = null;
        // The new queue's first poll answers at once: "Reconnecting…" goes as soon as the page is loaded again.
        failures = Math.max(failures, 1);
        useConnection.setState({ status: "reconnecting" });
        continue;
      }
      failures += 1;
      useConnection.setState({ status: "reconnecting" });
      // Soon after the first failure, then backing off up to 10 s (a rate limit says how long to wait);
      // the tab coming back or the network returning ends the wait at once (wake()).
      const retryAfter = error instanceof ApiError && typeof error.body["retry-after"] === "number" ? (error.body["retry-after"] as number) * 1000 : 0;
      if (retryAfter > 0) await new Promise((resolve) => setTimeout(resolve, retryAfter));
      else await backoff(Math.min(10_000, 250 * 2 ** Math.min(failures - 1, 6)));
    }
  }
}

function startPresence(myRun: number): void {
  if (myRun !== run || presenceTimer !== null) return;
  void reportPresence();
  presenceTimer = setInterval(() => void reportPresence(), 60_000);
}

let running = false;

export const connection = {
  /** Starts the event loop unless it runs already (the page may start it before React renders). */
  start(): void {
    if (running) return;
    running = true;
    run += 1;
    useConnection.setState({ status: "connecting", queueId: null, loaded: false });
    void loop(run);
  },
  stop(): void {
    running = false;
    run += 1;
    abort?.abort();
    if (presenceTimer) clearInterval(presenceTimer);
    presenceTimer = null;
    useConnection.setState({ status: "stopped", queueId: null, loaded: false });
  },
};

// The poll and the presence reports end before the session does.
onLogOut(() => connection.stop());
