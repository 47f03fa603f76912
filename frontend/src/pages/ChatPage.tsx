import { useCallback, useEffect, useState } from "react";
import { api, type Schemas, type Source } from "../api/client";
import ChatList from "../components/ChatList";
import Conversation from "../components/Conversation";
import DocumentsPanel from "../components/DocumentsPanel";
import SourcesPanel from "../components/SourcesPanel";

type Tab = "sources" | "documents";

export default function ChatPage() {
  const [chatId, setChatId] = useState<string | null>(null);
  // Bumped when the user picks a chat, not when a stream creates one (that must not remount).
  const [conversationKey, setConversationKey] = useState(0);
  const [listKey, setListKey] = useState(0);
  const [selected, setSelected] = useState<string[]>([]);
  const [linked, setLinked] = useState<string[]>([]);
  const [sources, setSources] = useState<Source[] | null>(null);
  const [highlighted, setHighlighted] = useState<number | null>(null);
  const [tab, setTab] = useState<Tab>("documents");
  const [panelOpen, setPanelOpen] = useState(false);
  const [collections, setCollections] = useState<Schemas["CollectionRead"][]>([]);

  useEffect(() => {
    void api.GET("/api/v1/collections", { params: { query: { limit: 100 } } }).then(({ data }) => setCollections(data?.items ?? []));
  }, []);

  const loadLinked = useCallback(async () => {
    if (!chatId) return setLinked([]);
    const { data } = await api.GET("/api/v1/chats/{chat_id}", { params: { path: { chat_id: chatId } } });
    setLinked(data?.document_ids ?? []);
  }, [chatId]);

  useEffect(() => {
    void loadLinked();
  }, [loadLinked]);

  // `reveal` is false when an answer arrives: the panel shows its sources where it is visible
  // (beside the chat), but on a phone, where it covers the chat, only the reader opens it.
  function showSources(next: Source[] | null, number: number | null, reveal = true) {
    setSources(next);
    setHighlighted(number);
    setTab("sources");
    if (reveal) setPanelOpen(true);
    if (number) window.setTimeout(() => document.getElementById(`source-${number}`)?.scrollIntoView?.({ block: "nearest" }), 0);
  }

  return (
    <main className="chat-page">
      <ChatList
        currentChatId={chatId}
        refreshKey={listKey}
        onSelect={(id) => {
          setChatId(id);
          setSources(null);
          setConversationKey((k) => k + 1);
        }}
      />
      <Conversation
        key={conversationKey}
        chatId={chatId}
        selectedDocumentIds={selected}
        collections={collections}
        onChatCreated={(id) => setChatId(id)}
        onAnswered={() => setListKey((k) => k + 1)}
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
          <DocumentsPanel selected={selected} onSelectedChange={setSelected} chatId={chatId} linkedIds={linked} onLinked={loadLinked} />
        )}
      </aside>
    </main>
  );
}
