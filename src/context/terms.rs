//! Korean programming terms and their English words (SPEC C1): a question asked in Korean
//! reaches English code without a model. A term is found in the question by containment
//! (Korean attaches particles: "로그인은", "설정을"); each brings the identifier words code
//! uses for it. An English question goes through the same table: a word of it (or its stem:
//! "cookies", "parsed") that is one of a term's words brings the term's other words, so
//! "temporary directory" reaches `tempfile` as "임시 디렉터리" does.

/// `(Korean, English words)`, longer terms first where one contains another.
const TERMS: &[(&str, &[&str])] = &[
    ("비밀번호", &["password", "passwd", "pw"]),
    ("패스워드", &["password", "passwd"]),
    ("로그인", &["login", "signin", "sign", "auth"]),
    ("로그아웃", &["logout", "signout"]),
    ("회원가입", &["signup", "register", "registration"]),
    ("가입", &["signup", "register"]),
    ("인증", &["auth", "authenticate", "authentication", "verify"]),
    ("권한", &["permission", "authorize", "role", "acl"]),
    ("세션", &["session"]),
    ("쿠키", &["cookie", "cookies"]),
    ("토큰", &["token", "jwt"]),
    ("사용자", &["user", "users", "account"]),
    ("유저", &["user", "users"]),
    ("계정", &["account", "user"]),
    ("관리자", &["admin", "administrator"]),
    ("이메일", &["email", "mail"]),
    ("메일", &["mail", "email", "smtp"]),
    ("전화번호", &["phone", "tel"]),
    ("주소", &["address", "url"]),
    ("파싱", &["parse", "parser", "parsing"]),
    ("파서", &["parser", "parse"]),
    ("구문", &["syntax", "parse", "grammar"]),
    ("분석", &["analyze", "analysis", "parse"]),
    ("설정", &["config", "settings", "configuration", "options", "set"]),
    ("환경변수", &["env", "environ", "environment"]),
    ("환경", &["env", "environment"]),
    ("옵션", &["option", "options", "flags"]),
    ("임시 파일", &["tempfile", "temp", "tmp", "temporary"]),
    ("임시파일", &["tempfile", "temp", "tmp"]),
    ("임시", &["temp", "tmp", "temporary"]),
    ("디렉터리", &["dir", "directory", "folder"]),
    ("디렉토리", &["dir", "directory", "folder"]),
    ("폴더", &["folder", "dir", "directory"]),
    ("경로", &["path", "route"]),
    ("파일", &["file", "files"]),
    ("읽기", &["read", "load"]),
    ("쓰기", &["write", "save"]),
    ("저장", &["save", "store", "persist", "write"]),
    ("불러오기", &["load", "read", "import"]),
    ("로드", &["load"]),
    ("삭제", &["delete", "remove", "unlink"]),
    ("제거", &["remove", "delete", "strip"]),
    ("추가", &["add", "append", "insert", "create"]),
    ("생성", &["create", "new", "make", "generate"]),
    ("수정", &["update", "modify", "edit", "patch"]),
    ("변경", &["change", "update", "modify"]),
    ("업데이트", &["update"]),
    ("갱신", &["update", "refresh", "renew"]),
    ("조회", &["get", "fetch", "query", "find", "lookup"]),
    ("검색", &["search", "find", "query", "grep"]),
    ("찾기", &["find", "search", "lookup"]),
    ("정렬", &["sort", "order"]),
    ("필터", &["filter"]),
    ("목록", &["list", "items"]),
    ("리스트", &["list"]),
    ("배열", &["array", "list"]),
    ("딕셔너리", &["dict", "dictionary", "map"]),
    ("사전", &["dict", "dictionary"]),
    ("맵", &["map"]),
    ("집합", &["set"]),
    ("큐", &["queue"]),
    ("스택", &["stack"]),
    ("트리", &["tree"]),
    ("그래프", &["graph"]),
    ("노드", &["node"]),
    ("문자열", &["string", "str", "text"]),
    ("문자", &["char", "character", "string"]),
    ("숫자", &["number", "int", "num", "digit"]),
    ("정수", &["int", "integer"]),
    ("실수", &["float", "double", "real"]),
    ("날짜", &["date", "datetime", "calendar"]),
    ("시간", &["time", "datetime", "timestamp", "clock"]),
    ("타임아웃", &["timeout"]),
    ("시간초과", &["timeout"]),
    ("지연", &["delay", "latency", "sleep"]),
    ("타이머", &["timer"]),
    ("스케줄", &["schedule", "scheduler", "cron"]),
    ("압축 해제", &["decompress", "unzip", "extract"]),
    ("압축", &["compress", "zip", "gzip", "archive"]),
    ("암호화", &["encrypt", "crypto", "cipher"]),
    ("복호화", &["decrypt", "crypto", "cipher"]),
    ("해시", &["hash", "digest", "sha"]),
    ("인코딩", &["encode", "encoding", "codec"]),
    ("디코딩", &["decode", "decoding", "codec"]),
    ("직렬화", &["serialize", "dump", "marshal"]),
    ("역직렬화", &["deserialize", "load", "unmarshal"]),
    ("변환", &["convert", "transform", "to"]),
    ("형식", &["format", "type"]),
    ("포맷", &["format"]),
    ("검증", &["validate", "validation", "verify", "check"]),
    ("유효성", &["valid", "validate", "validation"]),
    ("확인", &["check", "verify", "confirm"]),
    ("비교", &["compare", "cmp", "diff"]),
    ("차이", &["diff", "difference"]),
    ("복사", &["copy", "clone"]),
    ("이동", &["move", "rename"]),
    ("이름 변경", &["rename"]),
    ("이름", &["name"]),
    ("요청", &["request", "req"]),
    ("응답", &["response", "resp", "reply"]),
    ("서버", &["server"]),
    ("클라이언트", &["client"]),
    ("연결", &["connect", "connection"]),
    ("접속", &["connect", "connection"]),
    ("소켓", &["socket"]),
    ("포트", &["port"]),
    ("네트워크", &["network", "net", "http"]),
    ("다운로드", &["download", "fetch"]),
    ("업로드", &["upload"]),
    ("전송", &["send", "transfer", "transmit"]),
    ("수신", &["receive", "recv"]),
    ("프록시", &["proxy"]),
    ("캐시", &["cache", "cached"]),
    ("데이터베이스", &["database", "db", "sql"]),
    ("디비", &["db", "database"]),
    ("쿼리", &["query", "sql"]),
    ("테이블", &["table"]),
    ("트랜잭션", &["transaction", "commit", "rollback"]),
    ("로그", &["log", "logger", "logging"]),
    ("로깅", &["logging", "log", "logger"]),
    ("에러", &["error", "err", "exception"]),
    ("오류", &["error", "err", "exception"]),
    ("예외", &["exception", "error", "raise"]),
    ("에러 처리", &["error", "handling", "exception"]),
    ("리팩토링", &["refactor", "refactoring"]),
    ("리팩터링", &["refactor", "refactoring"]),
    ("아키텍처", &["architecture", "design"]),
    ("설계", &["design", "architecture"]),
    ("디자인 패턴", &["design", "pattern", "patterns"]),
    ("코드 리뷰", &["review", "code"]),
    ("리뷰", &["review"]),
    ("검토", &["review", "check"]),
    ("코딩 표준", &["code", "standards", "style"]),
    ("경고", &["warning", "warn"]),
    ("디버그", &["debug"]),
    ("테스트", &["test", "tests", "testing"]),
    ("단위 테스트", &["unittest", "test"]),
    ("모의", &["mock"]),
    ("스레드", &["thread", "threading"]),
    ("쓰레드", &["thread", "threading"]),
    ("프로세스", &["process", "subprocess"]),
    ("비동기", &["async", "asyncio", "await"]),
    ("동기화", &["sync", "lock", "synchronize"]),
    ("잠금", &["lock", "mutex"]),
    ("병렬", &["parallel", "concurrent"]),
    ("이벤트", &["event", "events"]),
    ("콜백", &["callback", "handler"]),
    ("핸들러", &["handler"]),
    ("리스너", &["listener"]),
    ("신호", &["signal"]),
    ("메시지", &["message", "msg"]),
    ("알림", &["notify", "notification"]),
    ("출력", &["print", "output", "write"]),
    ("입력", &["input", "read"]),
    ("표준 입력", &["stdin"]),
    ("명령줄", &["argv", "args", "cli", "argparse"]),
    ("인자", &["args", "argument", "arguments", "param"]),
    ("매개변수", &["param", "parameter", "args"]),
    ("반환", &["return", "result"]),
    ("결과", &["result", "output"]),
    ("함수", &["function", "func", "def"]),
    ("메서드", &["method"]),
    ("메소드", &["method"]),
    ("클래스", &["class"]),
    ("객체", &["object", "obj", "instance"]),
    ("인스턴스", &["instance"]),
    ("모듈", &["module"]),
    ("패키지", &["package"]),
    ("라이브러리", &["library", "lib"]),
    ("플러그인", &["plugin"]),
    ("인터페이스", &["interface"]),
    ("타입", &["type", "types"]),
    ("변수", &["variable", "var"]),
    ("상수", &["constant", "const"]),
    ("전역", &["global"]),
    ("반복", &["loop", "iterate", "iter", "repeat"]),
    ("재시도", &["retry"]),
    ("재귀", &["recursive", "recursion"]),
    ("정규식", &["regex", "re", "pattern"]),
    ("컴파일", &["compile", "compiler"]),
    ("계산", &["compute", "calculate", "calc"]),
    ("정규 표현식", &["regex", "re", "pattern"]),
    ("패턴", &["pattern", "match"]),
    ("매칭", &["match", "matching"]),
    ("템플릿", &["template"]),
    ("렌더링", &["render", "rendering"]),
    ("화면", &["screen", "view", "display"]),
    ("버튼", &["button"]),
    ("페이지", &["page"]),
    ("라우팅", &["route", "router", "routing"]),
    ("라우터", &["router", "route"]),
    ("미들웨어", &["middleware"]),
    ("컨트롤러", &["controller"]),
    ("모델", &["model"]),
    ("뷰", &["view"]),
    ("컴포넌트", &["component"]),
    ("상태", &["state", "status"]),
    ("이미지", &["image", "img"]),
    ("색", &["color", "colour"]),
    ("크기", &["size", "length"]),
    ("길이", &["length", "len"]),
    ("개수", &["count", "len"]),
    ("합계", &["sum", "total"]),
    ("평균", &["mean", "average", "avg"]),
    ("최대", &["max", "maximum"]),
    ("최소", &["min", "minimum"]),
    ("난수", &["random", "rand"]),
    ("랜덤", &["random"]),
    ("수학", &["math"]),
    ("통계", &["statistics", "stats"]),
    ("버전", &["version"]),
    ("빌드", &["build"]),
    ("배포", &["deploy", "release"]),
    ("설치", &["install", "setup"]),
    ("초기화", &["init", "initialize", "reset"]),
    ("종료", &["exit", "close", "shutdown", "quit"]),
    ("시작", &["start", "begin", "run"]),
    ("실행", &["run", "execute", "exec"]),
    ("중지", &["stop", "halt"]),
    ("취소", &["cancel", "abort"]),
    ("닫기", &["close"]),
    ("열기", &["open"]),
    ("결제", &["payment", "pay", "checkout"]),
    ("주문", &["order"]),
    ("장바구니", &["cart", "basket"]),
    ("상품", &["product", "item"]),
    ("가격", &["price"]),
    ("재고", &["stock", "inventory"]),
    ("번역", &["translate", "translation", "i18n", "gettext"]),
    ("언어", &["lang", "language", "locale"]),
    ("지역", &["locale", "region"]),
    ("국제화", &["i18n", "locale", "gettext"]),
    ("문서", &["doc", "docs", "document"]),
    ("주석", &["comment", "docstring"]),
    ("웹소켓", &["websocket", "ws"]),
    ("구독 해제", &["unsubscribe", "teardown", "dispose"]),
    ("구독", &["subscribe", "subscription", "subscriber"]),
    ("해제", &["release", "dispose", "free", "unsubscribe"]),
    ("옵저버블", &["observable"]),
    ("스트림", &["stream", "observable"]),
    ("디바운스", &["debounce"]),
    ("스로틀", &["throttle"]),
    ("병합", &["merge"]),
    ("애니메이션", &["animation", "animate"]),
    ("프레임", &["frame"]),
    ("버퍼", &["buffer"]),
    ("스케줄러", &["scheduler", "schedule"]),
    ("간격", &["interval"]),
    ("내보내기", &["export", "emit"]),
    ("방출", &["emit"]),
    ("메일 보내기", &["sendmail", "smtp", "send"]),
];

/// The English words the Korean terms in `query` stand for, each once, in table order.
pub fn english_words(query: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut covered: Vec<(usize, usize)> = Vec::new();
    for (korean, english) in TERMS {
        let mut from = 0;
        while let Some(at) = query[from..].find(korean).map(|i| i + from) {
            let end = at + korean.len();
            from = end;
            // a shorter term inside a longer one already found ("파일" in "임시 파일")
            if covered.iter().any(|(s, e)| *s <= at && end <= *e) {
                continue;
            }
            covered.push((at, end));
            for word in *english {
                if !out.contains(word) {
                    out.push(word);
                }
            }
        }
    }
    out
}

/// The stems of an English word: itself, and without a plural's or a tense's ending
/// ("cookies" → cookie, "parsed" → parse, "parsing" → parse, "compressed" → compress).
pub fn stems(word: &str) -> Vec<String> {
    let mut out = vec![word.to_string()];
    let mut add = |stem: String| {
        if stem.len() > 2 && !out.contains(&stem) {
            out.push(stem);
        }
    };
    if let Some(stem) = word.strip_suffix("ies") {
        // "queries" → query, "cookies" → cookie
        add(format!("{stem}y"));
        add(format!("{stem}ie"));
    } else if let Some(stem) = word.strip_suffix("es").filter(|s| s.ends_with("ss") || s.ends_with('x')) {
        add(stem.to_string());
    } else if let Some(stem) = word.strip_suffix('s').filter(|s| !s.ends_with('s')) {
        add(stem.to_string());
    }
    if let Some(stem) = word.strip_suffix("ed").or_else(|| word.strip_suffix("ing")) {
        // "parsed" → parse, "compressed" → compress, "mapped" → map
        add(format!("{stem}e"));
        add(stem.to_string());
        if stem.len() > 2 && stem.as_bytes()[stem.len() - 1] == stem.as_bytes()[stem.len() - 2] {
            add(stem[..stem.len() - 1].to_string());
        }
    }
    out
}

/// The words English `words` bring through the table: each term one of whose words is one
/// of them (or its stem) brings its other words, each once, in table order.
pub fn related_words(words: &[String]) -> Vec<&'static str> {
    let stems: Vec<String> = words.iter().flat_map(|w| stems(w)).collect();
    let mut out: Vec<&'static str> = Vec::new();
    for (_, english) in TERMS {
        if english.iter().any(|w| stems.iter().any(|s| s == w)) {
            for word in *english {
                if !out.contains(word) {
                    out.push(word);
                }
            }
        }
    }
    out
}

/// How many Korean terms the table knows.
pub fn term_count() -> usize {
    TERMS.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn korean_questions_become_english_words() {
        assert_eq!(english_words("로그인 기능 어디 있어?")[..2], ["login", "signin"]);
        assert!(english_words("쿠키는 어디서 설정해?").contains(&"cookie"));
        assert!(english_words("쿠키는 어디서 설정해?").contains(&"config"));
        assert!(english_words("JSON 파싱 코드").contains(&"parse"));
        assert!(english_words("비밀번호 검증").contains(&"password"));
        assert!(english_words("날짜 형식").contains(&"date"));
        assert!(english_words("압축 해제는?").contains(&"decompress"));
        // "임시 파일" is tempfile, not "file" on its own as well
        let words = english_words("임시 파일 만드는 곳");
        assert!(words.contains(&"tempfile") && !words.contains(&"files"), "{words:?}");
        assert!(english_words("where is login handled?").is_empty());
        assert!(term_count() >= 200, "{}", term_count());
        assert!(english_words("정규식 컴파일").contains(&"compile"));
        // reactive code's words; "구독 해제" is one term, not "구독" and "해제"
        assert_eq!(english_words("구독 해제는 어디서?"), ["unsubscribe", "teardown", "dispose"]);
        assert!(english_words("디바운스 시간").contains(&"debounce"));
    }

    #[test]
    fn english_questions_reach_the_same_words() {
        assert!(stems("cookies").contains(&"cookie".to_string()));
        assert_eq!(stems("parsed")[..2], ["parsed", "parse"]);
        assert!(stems("parsing").contains(&"parse".to_string()));
        assert!(stems("mapped").contains(&"map".to_string()));
        assert_eq!(stems("classes")[..2], ["classes", "class"]);
        assert_eq!(stems("queries")[..2], ["queries", "query"]);
        assert_eq!(stems("pass"), ["pass"]);
        let words = |q: &str| related_words(&q.split(' ').map(str::to_string).collect::<Vec<_>>());
        assert!(words("temporary directory").contains(&"tempfile"), "{:?}", words("temporary directory"));
        assert!(words("where are cookies parsed").contains(&"parser"));
        assert!(words("sign in").is_empty() || !words("sign in").contains(&"logout"));
        assert!(words("the quick brown fox").is_empty());
    }
}
