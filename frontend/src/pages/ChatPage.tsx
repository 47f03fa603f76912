import { useQuery } from "@tanstack/react-query";
import { useCallback, useEffect, useRef, useState } from "react";
import { api, type ChatDetail, type Source } from "../api/client";
import { unwrap, useWrite } from "../api/mutations";
import { keys, queryClient, refreshChats, useCollections } from "../api/queries";
import ChatHeader from "../components/ChatHeader";
import ChatList from "../components/ChatList";
import Conversation from "../components/Conversation";
import DocumentsPanel from "../components/DocumentsPanel";
import { ChatScope, NextMessageScope, type Named } from "../components/ScopeChips";
import SourcesPanel from "../components/SourcesPanel";
import ChatSettings from "../components/ChatSettings";
import { focusComposer, ShortcutsDialog, useShortcuts } from "../components/Shortcuts";
import { NARROW_SCREEN, useMediaQuery } from "../media";
import type { Navigate } from "../routes";

type Tab = "sources" | "documents";
// How long "Undo" is offered after deleting a chat.
const UNDO_MS = 10_000;

interface Props {
  chatId: string | null;
  navigate: Navigate;
}

export default function ChatPage({ chatId, navigate }: Props) {
  // Which conversation is on screen. A new `key` remounts it: when the user opens a chat (or
  // goes Back/Forward), not when the stream of a new chat gives it its id.
  const [shown, setShown] = useState({ chatId, key: 0 });
  const createdByStream = useRef<string | null>(null);
  const [selected, setSelected] = useState<Named[]>([]);
  const [pinned, setPinned] = useState(false);
  const [sources, setSources] = useState<Source[] | null>(null);
  const [highlighted, setHighlighted] = useState<number | null>(null);
  const [tab, setTab] = useState<Tab>("documents");
  const [panelOpen, setPanelOpen] = useState(false);
  // Phones: the chat list is a drawer, closed unless asked for.
  const [chatsOpen, setChatsOpen] = useState(false);
  const closeChats = useCallback(() => setChatsOpen(false), []);
  // A chat just deleted, offered back for a while (the server keeps it 30 days).
  const [deleted, setDeleted] = useState<ChatDetail | null>(null);
  const title = useRef<HTMLHeadingElement>(null);
  const [helpOpen, setHelpOpen] = useState(false);
  const narrow = useMediaQuery(NARROW_SCREEN);
  // A chat opened (by its address, from the list, Back): the focus goes to its message box
  // (phones: its name, so the keyboard does not cover the chat), never stays on the page.
  const focusOnOpen = useRef(true);
  const collections = useCollections();
  // The open chat's links and settings, cached per chat: a late reply for another chat fills
  // that chat's entry, not this one.
  const detailQuery = useQuery({
    queryKey: keys.chat(chatId ?? ""),
    enabled: chatId !== null,
    queryFn: async () => {
      const { data, response } = await api.GET("/api/v1/chats/{chat_id}", { params: { path: { chat_id: chatId ?? "" } } });
      // Gone, or another account's (the address outlives a sign-out): "missing", not an error.
      if (response.status === 404) return "missing" as const;
      return data ?? null;
    },
  });
  const detail = detailQuery.data && detailQuery.data !== "missing" ? detailQuery.data : null;
  // The address named a chat this account does not have: a new chat opens instead, saying so.
  const [missing, setMissing] = useState(false);
  const missingChat = chatId !== null && detailQuery.data === "missing" && !detailQuery.isFetching;
  useEffect(() => {
    if (!missingChat) return;
    setMissing(true);
    navigate({ page: "chat", chatId: null }, { replace: true });
  }, [missingChat, navigate]);
  const loadDetail = () => chatId && queryClient.invalidateQueries({ queryKey: keys.chat(chatId) });

  useShortcuts({
    onNewChat: useCallback(() => openChatRef.current(null), []),
    onHelp: useCallback(() => setHelpOpen(true), []),
  });

  useEffect(() => {
    if (!focusOnOpen.current || (chatId && !detail)) return;
    focusOnOpen.current = false;
    if (narrow && title.current) title.current.focus();
    else focusComposer();
  }, [chatId, detail, narrow]);

  useEffect(() => {
    if (!deleted) return;
    const timer = window.setTimeout(() => setDeleted(null), UNDO_MS);
    return () => window.clearTimeout(timer);
  }, [deleted]);

  const restore = useWrite({
    write: async (chat: ChatDetail) => {
      try {
        await unwrap(api.POST("/api/v1/chats/{chat_id}/restore", { params: { path: { chat_id: chat.id } } }), "The chat could not be restored");
      } finally {
        // Read while it was deleted, its detail said "missing": forgotten, it is read afresh.
        queryClient.removeQueries({ queryKey: keys.chat(chat.id) });
      }
    },
    invalidates: [keys.chats],
    invalidateOnError: true,
    onSuccess: (_, chat) => openChat(chat.id),
  });
  function undoDelete() {
    if (!deleted) return;
    setDeleted(null);
    restore.mutate(deleted);
  }

  if (shown.chatId !== chatId) {
    focusOnOpen.current = chatId !== createdByStream.current;
    // Only a new chat's stream turns "no chat" into a chat while keeping the view.
    const sameView = shown.chatId === null && chatId !== null && chatId === createdByStream.current;
    setShown({ chatId, key: sameView ? shown.key : shown.key + 1 });
    if (!sameView) {
      setSources(null);
      setSelected([]);
      setPinned(false);
    }
  }

  const openChatRef = useRef(openChat);
  openChatRef.current = openChat;
  function openChat(id: string | null) {
    setChatsOpen(false);
    setMissing(false);
    focusOnOpen.current = true;
    navigate({ page: "chat", chatId: id });
    // Also when it is the chat already open ("New chat" on a new chat): start afresh.
    setShown((current) => ({ chatId: id, key: current.key + 1 }));
    setSources(null);
    setSelected([]);
    setPinned(false);
  }

  // `reveal` is false when an answer arrives: the panel shows its sources where it is visible
  // (beside the chat), but on a phone, where it covers the chat, only the reader opens it.
  function showSources(next: Source[] | null, number: number | null, reveal = true) {
    setSources(next);
    setHighlighted(number);
    setTab("sources");
    if (reveal) setPanelOpen(true);
    if (number) window.setTimeout(() => document.getElementById(`source-${number}`)?.scrollIntoView?.({ block: "nearest" }), 0);
  }

  function chooseDocuments() {
    setTab("documents");
    setPanelOpen(true);
  }

  // The chat's links are what the server has afterwards, whether or not the unlink went through.
  const unlinks = { invalidates: [keys.chat(chatId ?? "")], invalidateOnError: true };
  const unlinkDocument = useWrite({
    write: (documentId: string) =>
      unwrap(
        api.DELETE("/api/v1/chats/{chat_id}/documents/{document_id}", { params: { path: { chat_id: chatId ?? "", document_id: documentId } } }),
        "The document could not be removed from this chat",
      ),
    ...unlinks,
  });
  const unlinkCollection = useWrite({
    write: (collectionId: string) =>
      unwrap(
        api.DELETE("/api/v1/chats/{chat_id}/collections/{collection_id}", { params: { path: { chat_id: chatId ?? "", collection_id: collectionId } } }),
        "The collection could not be removed from this chat",
      ),
    ...unlinks,
  });

  const linkedCollections = (detail?.collection_ids ?? []).map((id) => ({
    id,
    name: collections.find((collection) => collection.id === id)?.name ?? "(unnamed)",
  }));

  return (
    <main className="chat-page">
      <button
        className="chats-toggle"
        onClick={() => setChatsOpen(!chatsOpen)}
        aria-expanded={chatsOpen}
        aria-controls="chat-list-drawer"
      >
        {chatsOpen ? "Close chats" : "Chats"}
      </button>
      <ChatList
        currentChatId={chatId}
        onSelect={openChat}
        open={chatsOpen}
        onClose={closeChats}
        onShowShortcuts={() => setHelpOpen(true)}
      />
      <ShortcutsDialog open={helpOpen} onClose={() => setHelpOpen(false)} />
      <Conversation
        key={shown.key}
        chatId={chatId}
        selectedDocumentIds={selected.map((document) => document.id)}
        collections={collections}
        header={
          chatId ? (
            <>
              {detail && (
                <ChatHeader
                  ref={title}
                  chat={detail}
                  onChanged={() => void loadDetail()}
                  onDeleted={(chat) => {
                    setDeleted(chat);
                    openChat(null);
                  }}
                />
              )}
              <ChatScope
                documents={(detail?.documents ?? []).map((document) => ({ id: document.id, name: document.filename }))}
                collections={linkedCollections}
                onUnlinkDocument={(id) => chatId && unlinkDocument.mutate(id)}
                onUnlinkCollection={(id) => chatId && unlinkCollection.mutate(id)}
                onChoose={chooseDocuments}
              />
              {detail && <ChatSettings chat={detail} onChanged={() => void loadDetail()} />}
            </>
          ) : missing ? (
            <p role="status" className="undo-bar small">
              That chat was not found: it was deleted, or it belongs to another account. This is a new chat.
            </p>
          ) : deleted ? (
            <p role="status" className="undo-bar small">
              Deleted “{deleted.title}”.{" "}
              <button className="link" onClick={undoDelete}>
                Undo
              </button>
            </p>
          ) : null
        }
        nextMessageScope={
          <NextMessageScope
            documents={selected}
            newChat={chatId === null}
            pinned={pinned}
            onRemove={(id) => setSelected((current) => current.filter((document) => document.id !== id))}
            onPinnedChange={setPinned}
            onChoose={chooseDocuments}
          />
        }
        onChatCreated={(id) => {
          createdByStream.current = id;
          navigate({ page: "chat", chatId: id }, { replace: true });
          // Saved with its question: listed now, not only once the answer's stream has closed.
          void refreshChats();
        }}
        onPickDocument={(document) =>
          setSelected((current) =>
            current.some((picked) => picked.id === document.id) ? current : [...current, { id: document.id, name: document.name }],
          )
        }
        onSent={() => {
          if (!pinned) setSelected([]);
          void loadDetail(); // a new chat's first picks are now linked to it
        }}
        onAnswered={() => void refreshChats()}
        onShowSources={showSources}
      />
      <button className="panel-toggle" onClick={() => setPanelOpen(!panelOpen)} aria-expanded={panelOpen}>
        {panelOpen ? "Hide panel" : "Documents & sources"}
      </button>
      <aside className={`side-panel ${panelOpen ? "open" : ""}`} aria-label="Documents and sources">
        <div role="tablist" className="tabs">
          <button role="tab" aria-selected={tab === "documents"} onClick={() => setTab("documents")}>
            Documents
          </button>
          <button role="tab" aria-selected={tab === "sources"} onClick={() => setTab("sources")}>
            Sources
          </button>
        </div>
        {tab === "sources" ? (
          <SourcesPanel sources={sources} highlighted={highlighted} />
        ) : (
          <DocumentsPanel
            selected={selected.map((document) => document.id)}
            onToggleSelected={(document) =>
              setSelected((current) =>
                current.some((picked) => picked.id === document.id)
                  ? current.filter((picked) => picked.id !== document.id)
                  : [...current, { id: document.id, name: document.filename }],
              )
            }
            chatId={chatId}
            linkedIds={detail?.document_ids ?? []}
            onLinked={() => void loadDetail()}
          />
        )}
      </aside>
    </main>
  );
}
