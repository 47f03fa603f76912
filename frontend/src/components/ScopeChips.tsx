// What an answer will be drawn from, shown where the user looks: the chat's own documents and
// collections above the conversation, and the documents picked for the next message in the
// composer. Both are chips that can be removed.

export interface Named {
  id: string;
  name: string;
}

function Chip({ item, kind, onRemove }: { item: Named; kind: string; onRemove(): void }) {
  return (
    <li className="chip" data-testid={`chip-${kind}`}>
      <span title={item.name}>{item.name}</span>
      <button className="icon" onClick={onRemove} aria-label={`Remove ${item.name}`}>
        ×
      </button>
    </li>
  );
}

interface ChatScopeProps {
  documents: Named[];
  collections: Named[];
  onUnlinkDocument(id: string): void;
  onUnlinkCollection(id: string): void;
  onChoose(): void;
}

/** The chat's linked documents and collections: every message of the chat searches them. */
export function ChatScope({ documents, collections, onUnlinkDocument, onUnlinkCollection, onChoose }: ChatScopeProps) {
  const empty = !documents.length && !collections.length;
  return (
    <div className="chat-scope" role="group" aria-label="This chat answers from">
      <span className="muted small">Answers from</span>
      {empty ? (
        <span className="small">all documents you can read</span>
      ) : (
        <ul className="chips">
          {documents.map((document) => (
            <Chip key={document.id} item={document} kind="linked" onRemove={() => onUnlinkDocument(document.id)} />
          ))}
          {collections.map((collection) => (
            <Chip
              key={collection.id}
              item={{ id: collection.id, name: `Collection ${collection.name}` }}
              kind="linked-collection"
              onRemove={() => onUnlinkCollection(collection.id)}
            />
          ))}
        </ul>
      )}
      <button className="link small" onClick={onChoose}>
        {empty ? "Link documents" : "Change"}
      </button>
    </div>
  );
}

interface NextMessageScopeProps {
  documents: Named[];
  /** A new chat: the first message's picks become the chat's own documents. */
  newChat: boolean;
  pinned: boolean;
  onRemove(id: string): void;
  onPinnedChange(pinned: boolean): void;
  onChoose(): void;
}

/** The documents picked for the next message; they clear after sending unless pinned. */
export function NextMessageScope({ documents, newChat, pinned, onRemove, onPinnedChange, onChoose }: NextMessageScopeProps) {
  if (!documents.length) {
    return (
      <div className="next-scope">
        <button className="link small" onClick={onChoose}>
          + Ask about specific documents
        </button>
      </div>
    );
  }
  return (
    <div className="next-scope" role="group" aria-label="The next message asks about">
      <span className="muted small">Next message asks about</span>
      <ul className="chips">
        {documents.map((document) => (
          <Chip key={document.id} item={document} kind="next" onRemove={() => onRemove(document.id)} />
        ))}
      </ul>
      {newChat ? (
        <span className="muted small">(they become this chat&apos;s documents)</span>
      ) : (
        <label className="check small">
          <input type="checkbox" checked={pinned} onChange={(e) => onPinnedChange(e.target.checked)} />
          Keep for the following messages
        </label>
      )}
    </div>
  );
}
