// The signed-in page: header, sidebar, and the open view (inbox or a message list with its compose box).
import { lazy, Suspense, useEffect, useRef } from "react";
import { channelName, useChannels } from "../model/channels.ts";
import { useConnection } from "../model/connection.ts";
import { layoutStore, useLayout } from "../model/layout.ts";
import { t } from "../i18n.ts";
import { readLocation, useHomeHash, useNavigation } from "../model/navigation.ts";
import type { Narrow, View } from "../model/narrow.ts";
import { topicDisplayName, useRealm } from "../model/realm.ts";
import { useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";
import { BuddyList, UserListToggle } from "./BuddyList.tsx";
import { ChannelBrowser } from "./ChannelBrowser.tsx";
import { Compose } from "./Compose.tsx";
import { PeoplePage } from "./PeoplePage.tsx";
import { Inbox } from "./Inbox.tsx";
import { RecentConversations } from "./RecentConversations.tsx";
import { KeyboardShortcuts } from "./KeyboardShortcuts.tsx";
import { MessageActionsHost } from "./MessageActions.tsx";
import { MessageList } from "./MessageList.tsx";
import { SearchBox } from "./SearchBox.tsx";
import { Sidebar } from "./Sidebar.tsx";
import { TypingNotice } from "./TypingNotice.tsx";
import { StatusDialogHost } from "./OwnStatus.tsx";
import { UserCardHost } from "./UserCard.tsx";
import { UserMenu } from "./UserMenu.tsx";
import "../styles/connection.css";

// Rarely opened pages load on demand: they are not in the initial bundle.
const Settings = lazy(() => import("./Settings.tsx").then((m) => ({ default: m.Settings })));
const Organization = lazy(() => import("./Organization.tsx").then((m) => ({ default: m.Organization })));

// Rarely opened views, loaded on demand.
const ScheduledMessages = lazy(() => import("./ScheduledMessages.tsx"));
const DraftsView = lazy(() => import("./DraftsView.tsx"));

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

const PAGE_TITLES = { inbox: "Inbox", channels: "Channels", people: "People", settings: "Personal settings", organization: "Organization settings", scheduled: "Scheduled messages", drafts: "Drafts" } as const;

function viewTitle(view: View): string {
  if (view.kind === "recent") return t("Recent conversations");
  return view.kind === "messages" ? narrowTitle(view.narrow) : PAGE_TITLES[view.kind];
}

function ConnectionBanner() {
  const status = useConnection((s) => s.status);
  if (status !== "reconnecting") return null;
  return (
    <div className="connection-banner" role="status">
      {t("Reconnecting…")}
    </div>
  );
}

/** Phone size: the button that opens the sidebar drawer (hidden on wider screens, where the sidebar is always there). */
function DrawerToggle() {
  const open = useLayout((s) => s.leftOpen);
  const ref = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!open) return;
    // Into the drawer, as a dialog would; Escape closes it and comes back here.
    document.querySelector<HTMLElement>("#left-sidebar a")?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      layoutStore.close();
      ref.current?.focus();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open]);
  return (
    <button ref={ref} type="button" className="drawer-toggle" aria-label={t("Menu")} aria-expanded={open} aria-controls="left-sidebar" onClick={() => layoutStore.toggleLeft()}>
      <span aria-hidden="true">☰</span>
    </button>
  );
}

function DrawerBackdrop() {
  const open = useLayout((s) => s.leftOpen);
  return open ? <div className="drawer-backdrop open" aria-hidden="true" onClick={() => layoutStore.close()} /> : null;
}

export function MainView() {
  const loaded = useConnection((s) => s.loaded);
  const view = useNavigation((s) => s.view);
  const realmName = useRealm((s) => s.realmName);
  const homeHash = useHomeHash();
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
        {t("Loading…")}
        <ConnectionBanner />
      </div>
    );
  }
  return (
    <div className="app">
      <header className="app-header">
        <DrawerToggle />
        <a className="brand" href={homeHash}>
          {realmName || t("Parley")}
        </a>
        <SearchBox />
        <ConnectionBanner />
        <UserListToggle />
        <UserMenu />
      </header>
      <Sidebar view={view} />
      <DrawerBackdrop />
      <main className="centre" aria-label={title}>
        <h2 className="view-title">{title}</h2>
        {view.kind === "inbox" ? (
          <Inbox />
        ) : view.kind === "recent" ? (
          <RecentConversations />
        ) : view.kind === "channels" ? (
          <ChannelBrowser />
        ) : view.kind === "people" ? (
          <PeoplePage />
        ) : view.kind === "settings" || view.kind === "organization" ? (
          <Suspense fallback={<p className="loading">{t("Loading…")}</p>}>{view.kind === "settings" ? <Settings /> : <Organization />}</Suspense>
        ) : view.kind === "scheduled" || view.kind === "drafts" ? (
          <Suspense fallback={<p className="loading">{t("Loading…")}</p>}>{view.kind === "scheduled" ? <ScheduledMessages /> : <DraftsView />}</Suspense>
        ) : (
          <>
            <MessageList narrow={view.narrow} near={view.near} />
            <TypingNotice narrow={view.narrow} />
            <Compose narrow={view.narrow} />
          </>
        )}
      </main>
      <BuddyList />
      <UserCardHost />
      <StatusDialogHost />
      <MessageActionsHost />
      <KeyboardShortcuts />
    </div>
  );
}
