import { useCallback, useEffect, useState } from "react";
import { api, loadTokens, logout, onSessionEnd, type User } from "./api/client";
import AuthPage from "./pages/AuthPage";
import ChatPage from "./pages/ChatPage";
import AdminPage from "./pages/AdminPage";
import AccountPage from "./pages/AccountPage";
import CollectionsPage from "./pages/CollectionsPage";
import ChangePasswordPage from "./pages/ChangePasswordPage";

type View = "chat" | "admin" | "account" | "collections";

export default function App() {
  const [user, setUser] = useState<User | null>(null);
  const [checking, setChecking] = useState(Boolean(loadTokens()));
  const [view, setView] = useState<View>("chat");
  const [notice, setNotice] = useState<string | null>(null);

  const loadUser = useCallback(async () => {
    const { data } = await api.GET("/api/v1/users/me");
    setUser(data ?? null);
    setChecking(false);
  }, []);

  useEffect(() => {
    if (loadTokens()) void loadUser();
    return onSessionEnd((why) => {
      setUser(null);
      setView("chat");
      setNotice(why === "ended" ? "Your session ended. Log in again to go on; an unsent message is kept in its chat." : null);
    });
  }, [loadUser]);

  if (checking) return <p className="loading">Loading…</p>;
  if (!user) return <AuthPage notice={notice} onAuthenticated={loadUser} />;
  if (user.must_change_password) return <ChangePasswordPage email={user.email} onChanged={() => void loadUser()} onLogout={logout} />;
  return (
    <div className="app">
      <header className="topbar">
        <button className="brand" onClick={() => setView("chat")}>
          docchat
        </button>
        <nav aria-label="Main">
          <button onClick={() => setView(view === "collections" ? "chat" : "collections")}>
            {view === "collections" ? "Back to chats" : "Collections"}
          </button>
          {user.role === "admin" && (
            <button onClick={() => setView(view === "admin" ? "chat" : "admin")}>
              {view === "admin" ? "Back to chats" : "Admin"}
            </button>
          )}
          <button onClick={() => setView(view === "account" ? "chat" : "account")} title={user.email} aria-label={`Account: ${user.email}`}>
            {view === "account" ? (
              "Back to chats"
            ) : (
              <>
                <span className="who">{user.email}</span>
                <span className="phone-only">Account</span>
              </>
            )}
          </button>
          <button onClick={logout}>Log out</button>
        </nav>
      </header>
      {view === "admin" ? <AdminPage currentUserId={user.id} /> : view === "account" ? <AccountPage user={user} /> : view === "collections" ? <CollectionsPage userId={user.id} /> : <ChatPage />}
    </div>
  );
}
