//! Intent routing (SPEC M2, seed 004): a task text goes to a role by keyword tables in Korean
//! and English, the first role in the order architect > tester > reviewer > documenter >
//! coder with a match winning, the coder when nothing matches; an explicit role overrides.
//! The words that chose the role are kept, for the plan and the audit log.

use serde::Serialize;

use super::mode::Mode;

/// A role the agent takes for a task or a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Architect,
    Coder,
    Tester,
    Reviewer,
    Documenter,
}

impl Role {
    pub const ALL: [Role; 5] = [Role::Architect, Role::Coder, Role::Tester, Role::Reviewer, Role::Documenter];

    pub fn name(self) -> &'static str {
        match self {
            Role::Architect => "architect",
            Role::Coder => "coder",
            Role::Tester => "tester",
            Role::Reviewer => "reviewer",
            Role::Documenter => "documenter",
        }
    }

    pub fn from_name(name: &str) -> Option<Role> {
        let name = name.trim().to_ascii_lowercase();
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The mode a step taken by this role starts in.
    pub fn mode(self) -> Mode {
        match self {
            Role::Architect => Mode::Design,
            Role::Coder => Mode::Implementation,
            Role::Tester => Mode::Test,
            Role::Reviewer => Mode::Qa,
            Role::Documenter => Mode::Documentation,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Seed 004's keywords (Korean, with the English it already had), and the English words for
/// the same intents, in priority order. Matched in the lowercased text: Korean by containment
/// (particles attach), English as whole words or their start ("tests", "documenting").
const TABLE: &[(Role, &[&str], &[&str])] = &[
    (
        Role::Architect,
        &["설계", "구조", "아키텍처", "모듈", "api 설계", "데이터 모델", "디렉토리", "인터페이스", "의존성"],
        &[
            "architecture",
            "architect",
            "design",
            "structure",
            "module layout",
            "data model",
            "directory layout",
            "interface design",
            "dependency direction",
        ],
    ),
    (
        Role::Tester,
        &["테스트", "커버리지", "pytest", "검증", "단위 테스트", "통합 테스트"],
        &["test", "coverage", "pytest", "vitest", "jest", "unit test", "integration test"],
    ),
    (
        Role::Reviewer,
        &["리뷰", "검토", "품질 확인", "코드 검사", "점검", "감사"],
        &["review", "audit", "inspect", "quality check", "code check"],
    ),
    (
        Role::Documenter,
        &["문서", "readme", "api 문서", "changelog", "주석", "가이드", "설명서"],
        &["document", "docs", "readme", "changelog", "docstring", "guide", "manual"],
    ),
    (
        Role::Coder,
        &["구현", "작성", "코딩", "버그 수정", "리팩토링", "기능 추가", "개발", "수정"],
        &["implement", "write", "code", "fix", "bug", "refactor", "add", "develop", "change"],
    ),
];

/// A routing decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Routed {
    pub role: Role,
    /// The words that chose it (empty: the fallback, or an explicit role).
    pub words: Vec<String>,
    /// The role was given, not guessed.
    pub explicit: bool,
}

impl Routed {
    /// How the plan and the audit log say it.
    pub fn describe(&self) -> String {
        if self.explicit {
            format!("{} (asked for)", self.role)
        } else if self.words.is_empty() {
            format!("{} (no keyword matched: the default)", self.role)
        } else {
            format!("{} (for {})", self.role, self.words.join(", "))
        }
    }
}

/// The role for `text`, or `explicit` when given.
pub fn route(text: &str, explicit: Option<Role>) -> Routed {
    if let Some(role) = explicit {
        return Routed { role, words: Vec::new(), explicit: true };
    }
    let text = Words::of(text);
    for (role, korean, words) in TABLE {
        let found = text.find(korean, words);
        if !found.is_empty() {
            return Routed { role: *role, words: found, explicit: false };
        }
    }
    Routed { role: Role::Coder, words: Vec::new(), explicit: false }
}

/// Seed 000's intents: the mode a task's words start the machine in, the first match in this
/// order winning (implementation when none does).
const INTENTS: &[(Mode, &[&str], &[&str])] = &[
    (
        Mode::Verification,
        &["전체 검증", "전부 검증", "검증 실행", "전체 검사", "전부 검사"],
        &[
            "verify everything",
            "verify the project",
            "verify the whole",
            "full verification",
            "run every check",
            "run all checks",
        ],
    ),
    (Mode::Migration, &["마이그레이션", "마이그레이트"], &["migrate", "migration", "port to", "upgrade to"]),
    (Mode::Test, &["테스트"], &["test"]),
    (Mode::Qa, &["리뷰"], &["review"]),
    (
        Mode::Profiling,
        &["프로파일링", "프로파일", "성능 측정"],
        &["profile", "profiling", "hot spot", "hotspot"],
    ),
    (Mode::Refactor, &["리팩토링"], &["refactor"]),
    (Mode::Debug, &["에러", "버그"], &["error", "bug", "fix"]),
    (Mode::Design, &["설계"], &["design"]),
    (Mode::ContextNav, &["찾아", "어디"], &["where"]),
];

/// The mode `text` starts in, with the words that say so; `None`: implementation.
pub fn intent(text: &str) -> Option<(Mode, Vec<String>)> {
    let text = Words::of(text);
    INTENTS.iter().find_map(|(mode, korean, words)| {
        let found = text.find(korean, words);
        (!found.is_empty()).then_some((*mode, found))
    })
}

/// Whether `text` asks for the coverage of the code it changes ("커버리지", "coverage"):
/// then the tests run under a line tracer and new code no test runs is sent back.
pub fn wants_coverage(text: &str) -> bool {
    !Words::of(text).find(&["커버리지"], &["coverage"]).is_empty()
}

/// A task's text, lowercased, and its English words.
struct Words {
    lower: String,
}

impl Words {
    fn of(text: &str) -> Words {
        Words { lower: text.to_lowercase() }
    }

    /// The keywords found: Korean by containment (particles attach), English as whole words
    /// or their start ("tests", "documenting").
    fn find(&self, korean: &[&str], english: &[&str]) -> Vec<String> {
        let words: Vec<&str> =
            self.lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
        let mut found: Vec<String> = Vec::new();
        for keyword in korean {
            if !keyword.is_ascii()
                && self.lower.contains(keyword)
                && !found.iter().any(|f| f.contains(keyword))
            {
                found.push((*keyword).to_string());
            }
        }
        for keyword in english {
            let parts: Vec<&str> = keyword.split(' ').collect();
            let hit = words.windows(parts.len()).any(|window| {
                window.iter().zip(&parts).enumerate().all(|(i, (word, part))| {
                    // the last word may go on ("tests", "documenting"); the others are whole
                    if i + 1 == parts.len() { word.starts_with(part) } else { word == part }
                })
            });
            if hit && !found.iter().any(|f| f == keyword) {
                found.push((*keyword).to_string());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_route_by_priority_in_korean_english_and_both() {
        let cases: &[(&str, Role, &[&str])] = &[
            // seed 004's tables
            ("결제 모듈 구조를 설계해줘", Role::Architect, &["설계", "구조", "모듈"]),
            ("User 클래스에 validate_email 메서드 추가해줘", Role::Coder, &[]),
            ("로그인 버그 수정", Role::Coder, &["버그 수정"]),
            ("validate_email 단위 테스트 작성", Role::Tester, &["테스트", "단위 테스트"]),
            ("이 PR 코드 리뷰해줘", Role::Reviewer, &["리뷰"]),
            ("README 문서 업데이트", Role::Documenter, &["문서", "readme"]),
            ("API 문서에 주석 추가", Role::Documenter, &["문서", "api 문서", "주석"]),
            // English
            ("Design the data model for orders", Role::Architect, &["design", "data model"]),
            ("Write tests for the parser", Role::Tester, &["test"]),
            ("Review the payment code for security issues", Role::Reviewer, &["review"]),
            ("Update the README and the changelog", Role::Documenter, &["readme", "changelog"]),
            ("Implement retry with backoff", Role::Coder, &["implement"]),
            ("Make it faster", Role::Coder, &[]),
            // mixed: the higher priority wins
            ("login 기능 테스트 작성하고 README도", Role::Tester, &["테스트"]),
            ("refactor the module 구조", Role::Architect, &["구조"]),
            ("add docs for the CLI", Role::Documenter, &["docs"]),
            // "latest" is not "test", "designer" starts with "design" (the last word may go on)
            ("fetch the latest rates", Role::Coder, &[]),
        ];
        for (text, role, words) in cases {
            let routed = route(text, None);
            assert_eq!(routed.role, *role, "{text}: {routed:?}");
            for word in *words {
                assert!(routed.words.iter().any(|w| w == word), "{text}: {word} not in {:?}", routed.words);
            }
        }
        let coder = route("User 클래스에 validate_email 메서드 추가해줘", None);
        assert!(coder.words.is_empty(), "the fallback: {coder:?}");
        assert_eq!(coder.describe(), "coder (no keyword matched: the default)");
        let explicit = route("리뷰해줘", Some(Role::Documenter));
        assert_eq!((explicit.role, explicit.explicit), (Role::Documenter, true));
        assert_eq!(route("테스트 작성", None).describe(), "tester (for 테스트)");
        assert_eq!(Role::from_name("Reviewer"), Some(Role::Reviewer));
        assert_eq!(Role::Reviewer.mode(), Mode::Qa);
    }

    #[test]
    fn intents_choose_the_starting_mode_in_korean_and_english() {
        let cases: &[(&str, Option<Mode>)] = &[
            ("결제 모듈을 리팩토링해줘", Some(Mode::Refactor)),
            ("Refactor the parser", Some(Mode::Refactor)),
            ("models.py 리뷰해줘", Some(Mode::Qa)),
            ("로그인 버그 수정", Some(Mode::Debug)),
            ("Fix the crash on empty input", Some(Mode::Debug)),
            ("에러 메시지가 이상해", Some(Mode::Debug)),
            ("validate_email 테스트 작성", Some(Mode::Test)),
            ("결제 설계", Some(Mode::Design)),
            ("User 클래스가 어디 있는지 찾아줘", Some(Mode::ContextNav)),
            ("Where is the config read?", Some(Mode::ContextNav)),
            ("프로젝트 전체 검증해줘", Some(Mode::Verification)),
            ("Verify everything before the release", Some(Mode::Verification)),
            ("비밀번호 검증 함수 추가", None),
            ("optparse에서 argparse로 마이그레이션", Some(Mode::Migration)),
            ("Migrate the settings from ini to toml", Some(Mode::Migration)),
            ("User 클래스에 validate_email 메서드 추가해줘", None),
            ("Implement retry with backoff", None),
        ];
        for (text, mode) in cases {
            assert_eq!(intent(text).map(|(m, _)| m), *mode, "{text}");
        }
        assert_eq!(intent("결제 모듈을 리팩토링해줘").unwrap().1, ["리팩토링"]);
        assert!(
            wants_coverage("mean 테스트 커버리지 올려줘")
                && wants_coverage("Raise the test coverage of mean")
        );
        assert!(!wants_coverage("validate_email 테스트 작성"));
    }
}
