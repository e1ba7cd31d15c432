// The signed-in page: header, sidebar, and the open view (inbox or a message list with its compose box).
import { useEffect } from "react";
import { channelName, useChannels } from "../model/channels.ts";
import { useConnection } from "../model/connection.ts";
import { readLocation, useNavigation } from "../model/navigation.ts";
import type { Narrow, View } from "../model/narrow.ts";
import { topicDisplayName, useRealm } from "../model/realm.ts";
import { useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";
import { ChannelBrowser } from "./ChannelBrowser.tsx";
import { Compose } from "./Compose.tsx";
import { Organization } from "./Organization.tsx";
import { PeoplePage } from "./PeoplePage.tsx";
import { Settings } from "./Settings.tsx";
import { Inbox } from "./Inbox.tsx";
import { KeyboardShortcuts } from "./KeyboardShortcuts.tsx";
import { MessageActionsHost } from "./MessageActions.tsx";
import { MessageList } from "./MessageList.tsx";
import { SearchBox } from "./SearchBox.tsx";
import { Sidebar } from "./Sidebar.tsx";
import { TypingNotice } from "./TypingNotice.tsx";
import { UserMenu } from "./UserMenu.tsx";

export function narrowTitle(narrow: Narrow): string {
  switch (narrow.kind) {
    case "all":
      return "All messages";
    case "channel":
      return `#${channelName(narrow.streamId) ?? "unknown channel"}`;
    case "topic":
      return `#${channelName(narrow.streamId) ?? "unknown channel"} > ${topicDisplayName(narrow.topic)}`;
    case "dm":
      return narrow.userIds.map(userName).join(", ");
    case "all-dms":
      return "Direct messages";
    case "mentions":
      return "Mentions";
    case "starred":
      return "Starred messages";
    case "search":
      return `Search: ${narrow.query}`;
  }
}

const PAGE_TITLES = { inbox: "Inbox", channels: "Channels", people: "People", settings: "Personal settings", organization: "Organization settings" } as const;

function viewTitle(view: View): string {
  return view.kind === "messages" ? narrowTitle(view.narrow) : PAGE_TITLES[view.kind];
}

function ConnectionBanner() {
  const status = useConnection((s) => s.status);
  if (status !== "reconnecting") return null;
  return (
    <div className="connection-banner" role="status">
      Reconnecting…
    </div>
  );
}

export function MainView() {
  const loaded = useConnection((s) => s.loaded);
  const view = useNavigation((s) => s.view);
  const realmName = useRealm((s) => s.realmName);
  const total = useUnreads((s) => s.counts.total);
  // Names in the title change with channel renames.
  useChannels((s) => s.subscriptions);
  useUsers((s) => s.byId);

  useEffect(() => {
    const onHash = () => readLocation();
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  const title = viewTitle(view);
  useEffect(() => {
    document.title = `${total > 0 ? `(${total}) ` : ""}${title}${realmName ? ` - ${realmName}` : ""} - Parley`;
  }, [total, title, realmName]);

  if (!loaded) {
    return (
      <div className="splash" aria-busy="true">
        Loading…
        <ConnectionBanner />
      </div>
    );
  }
  return (
    <div className="app">
      <header className="app-header">
        <a className="brand" href="#inbox">
          {realmName || "Parley"}
        </a>
        <SearchBox />
        <ConnectionBanner />
        <UserMenu />
      </header>
      <Sidebar view={view} />
      <main className="centre" aria-label={title}>
        <h2 className="view-title">{title}</h2>
        {view.kind === "inbox" ? (
          <Inbox />
        ) : view.kind === "channels" ? (
          <ChannelBrowser />
        ) : view.kind === "people" ? (
          <PeoplePage />
        ) : view.kind === "settings" ? (
          <Settings />
        ) : view.kind === "organization" ? (
          <Organization />
        ) : (
          <>
            <MessageList narrow={view.narrow} near={view.near} />
            <TypingNotice narrow={view.narrow} />
            <Compose narrow={view.narrow} />
          </>
        )}
      </main>
      <MessageActionsHost />
      <KeyboardShortcuts />
    </div>
  );
}
