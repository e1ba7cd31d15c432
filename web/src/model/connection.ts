// The link to the server's event system: POST /register fills every store,
// then GET /events is long-polled and each event applied. When the queue is
// gone (BAD_EVENT_QUEUE_ID: expired, or the server restarted) the client
// registers again, which reloads the stores and refetches the open narrow;
// while the server cannot be reached the page says it is reconnecting.
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
import { applyEvent } from "./events.ts";
import { messagesStore } from "./messages.ts";
import { permissionsStore } from "./permissions.ts";
import { parseHash } from "./narrow.ts";
import { readLocation, useNavigation } from "./navigation.ts";
import { useSession } from "./session.ts";
import { presenceStore } from "./presence.ts";
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
};

let run = 0;
let abort: AbortController | null = null;
let presenceTimer: ReturnType<typeof setInterval> | null = null;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
  channelsStore.load(initial);
  unreadsStore.load(initial.unread_msgs, initial.user_id);
  presenceStore.load(initial.presences);
  emojiStore.load(initial.server_emoji_data_url, initial.realm_emoji);
  settingsStore.load(initial.user_settings);
  userStatusStore.load(initial.user_status);
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
  const view = parseHash(window.location.hash, selfId);
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
      const reply = await api.get<{ events: ServerEvent[] }>("/events", { queue_id: queueId, last_event_id: lastEventId }, { signal: abort.signal });
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
        useConnection.setState({ status: "reconnecting" });
        continue;
      }
      failures += 1;
      useConnection.setState({ status: "reconnecting" });
      // Back off up to 10 s; rate limits say how long to wait.
      const retryAfter = error instanceof ApiError && typeof error.body["retry-after"] === "number" ? (error.body["retry-after"] as number) * 1000 : 0;
      await sleep(Math.max(retryAfter, Math.min(10_000, 500 * 2 ** Math.min(failures, 5))));
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
