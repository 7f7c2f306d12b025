//! LSP's framing: each message after a `Content-Length` header block. Read forgivingly — junk
//! before a header is reported and skipped, an absurd length is refused at once and reading
//! resynchronises on the next header, a header block that is not one is said in one sentence —
//! so one bad frame never makes the reader deaf to the frames after it. Written in one piece.

use std::io::BufRead;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// Frames larger than this are refused rather than buffered: 256 MiB.
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;
/// Header lines longer than this are not headers.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// What one read of the input gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Body(Vec<u8>),
    /// Something that is not a message, said in one sentence; reading goes on.
    Bad(String),
}

/// Reads frames, resynchronising after anything that is not one.
pub struct FrameReader<R> {
    input: BufReader<R>,
    /// A header line already read, which starts the next frame.
    pending: Option<Vec<u8>>,
    /// Skipping the body of a frame that was refused: what comes before the next header is
    /// not reported again.
    resyncing: bool,
    /// The tail of a line cut at `MAX_HEADER_LINE`, read again as the start of the next one.
    carried: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(input: R) -> FrameReader<R> {
        FrameReader { input: BufReader::new(input), pending: None, resyncing: false, carried: Vec::new() }
    }

    async fn line(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(line) = self.pending.take() {
            return Ok(Some(line));
        }
        let mut line = std::mem::take(&mut self.carried);
        let carried = line.len();
        let read = (&mut self.input).take(MAX_HEADER_LINE as u64).read_until(b'\n', &mut line).await?;
        if read == 0 && carried == 0 {
            return Ok(None);
        }
        if read > 0 && !line.ends_with(b"\n") && line.len() >= HEADER.len() {
            // a long run of junk without a line break: its last bytes may be the start of a
            // header that the next read completes, so they open the next line
            let keep = line.len() - (HEADER.len() - 1);
            let keep = (keep..line.len()).find(|&i| !(0x80..0xc0).contains(&line[i])).unwrap_or(keep);
            self.carried = line.split_off(keep);
        }
        Ok(Some(line))
    }

    /// The next frame; `None` at the end of the input.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        let mut junk = 0usize;
        let mut first_junk = String::new();
        let mut length: Option<usize> = None;
        let mut saw_header = false;
        let mut problem: Option<String> = None;
        loop {
            let Some(line) = self.line().await? else {
                if junk > 0 && !std::mem::take(&mut self.resyncing) {
                    return Ok(Some(Frame::Bad(format!("{junk} stray bytes at the end of the input"))));
                }
                return Ok(None);
            };
            // a header after binary junk on the same line: found in the bytes, since the junk
            // need not be text (and lossy decoding would move every offset after it)
            if let Some(at) = find_header(&line).filter(|&at| at > 0) {
                junk += at;
                if junk == at {
                    first_junk = shorten(&String::from_utf8_lossy(&line[..at]));
                }
                self.pending = Some(line[at..].to_vec());
                if saw_header {
                    // the header block before it never ended: that was junk too
                    saw_header = false;
                    length = None;
                    problem = None;
                }
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let trimmed = text.trim_end_matches(['\r', '\n']);
            if trimmed.is_empty() {
                if saw_header {
                    break;
                }
                if junk > 0 && !self.resyncing {
                    // junk that ends like a header block: report it now, not with the next frame
                    return Ok(Some(Frame::Bad(format!(
                        "{junk} bytes that are not a message were skipped (starting {first_junk:?})"
                    ))));
                }
                continue; // blank lines between frames are harmless
            }
            if find_header(&line) == Some(0) {
                if !saw_header && junk > 0 {
                    // junk before this frame: report it, then read the frame from its header
                    self.pending = Some(line);
                    if std::mem::take(&mut self.resyncing) {
                        junk = 0;
                        continue;
                    }
                    return Ok(Some(Frame::Bad(format!(
                        "{junk} stray bytes before a message were skipped (starting {first_junk:?}; a Content-Length counted wrong?)"
                    ))));
                }
                self.resyncing = false;
                saw_header = true;
                let value = trimmed[HEADER.len()..].trim();
                match value.parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => problem = Some(format!("bad Content-Length header {value:?}")),
                }
                continue;
            }
            if saw_header {
                if !trimmed.contains(':') {
                    problem = Some(format!("a header line that is not a header: {:?}", shorten(trimmed)));
                }
                continue; // Content-Type and other headers
            }
            if junk == 0 && is_header_name(trimmed) {
                saw_header = true; // a Content-Type before the Content-Length
                continue;
            }
            if junk == 0 {
                first_junk = shorten(trimmed);
            }
            junk += line.len();
        }
        if let Some(problem) = problem {
            // skip the body when its length is believable, so the next frame is read from
            // its start; otherwise resynchronise on the next header
            match length.filter(|&n| n <= MAX_FRAME_BYTES) {
                Some(length) => self.skip(length).await?,
                None => self.resyncing = true,
            }
            return Ok(Some(Frame::Bad(problem)));
        }
        let Some(length) = length else {
            return Ok(Some(Frame::Bad("a message without a Content-Length header".to_string())));
        };
        if length > MAX_FRAME_BYTES {
            self.resyncing = true;
            return Ok(Some(Frame::Bad(format!(
                "a message of {length} bytes is larger than the {MAX_FRAME_BYTES}-byte limit; it was skipped up to the next header"
            ))));
        }
        let mut body = vec![0; length];
        self.input.read_exact(&mut body).await?;
        Ok(Some(Frame::Body(body)))
    }

    async fn skip(&mut self, length: usize) -> std::io::Result<()> {
        tokio::io::copy(&mut (&mut self.input).take(length as u64), &mut tokio::io::sink()).await?;
        Ok(())
    }
}

/// The header every frame starts with (compared without case).
const HEADER: &[u8] = b"content-length:";

/// Where a `Content-Length:` header starts in `line`'s bytes, if it holds one.
fn find_header(line: &[u8]) -> Option<usize> {
    line.windows(HEADER.len()).position(|w| w.eq_ignore_ascii_case(HEADER))
}

/// `Name: value`, with a name of letters and dashes.
fn is_header_name(line: &str) -> bool {
    line.split_once(':').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

fn shorten(text: &str) -> String {
    text.chars().take(60).collect()
}

/// `body` framed for the wire into `message`, replacing what it held.
pub fn frame_into(body: &[u8], message: &mut Vec<u8>) {
    message.clear();
    message.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    message.extend_from_slice(body);
}

/// `body` framed for the wire.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(body.len() + 32);
    frame_into(body, &mut message);
    message
}

/// The next frame's body from a blocking reader, as a client reads the server it tests or
/// measures — strictly: a header block without a `Content-Length` of at most
/// [`MAX_FRAME_BYTES`] is an error (a server's framing gone wrong shows); other headers are
/// passed over; `None` when the stream ends.
pub fn read_blocking(reader: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            return Ok(None);
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok().filter(|&n| n <= MAX_FRAME_BYTES);
        }
    }
    let Some(length) = length else {
        let problem = "a header block without a Content-Length the reader can believe";
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, problem));
    };
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = FrameReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.unwrap() {
            out.push(frame);
        }
        out
    }

    fn bad(frame: &Frame) -> &str {
        match frame {
            Frame::Bad(problem) => problem,
            Frame::Body(body) => panic!("a frame, not a problem: {}", String::from_utf8_lossy(body)),
        }
    }

    fn body(text: &str) -> Frame {
        Frame::Body(text.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn reads_frames_and_reports_bad_headers() {
        let input = b"Content-Length: 2\r\n\r\n{}\n\r\nContent-Type: x\r\ncontent-length:3\r\n\r\n[1]Content-Length: 2\r\nnot a header\r\n\r\n{}Content-Length: nope\r\n\r\n";
        let got = frames(input).await;
        assert_eq!(got[0], body("{}"));
        assert_eq!(got[1], body("[1]"));
        assert!(bad(&got[2]).contains("not a header"), "{got:?}");
        assert!(bad(&got[3]).contains("bad Content-Length"), "{got:?}");
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[tokio::test]
    async fn junk_before_a_frame_is_reported_and_the_frame_kept() {
        let input = b"garbage\r\nmore garbage\r\nContent-Length: 2\r\n\r\n{}xxContent-Length: 2\r\n\r\n[]";
        let got = frames(input).await;
        assert!(bad(&got[0]).contains("23 stray bytes"), "{got:?}");
        assert_eq!(got[1], body("{}"));
        assert!(bad(&got[2]).contains("2 stray bytes"), "{got:?}");
        assert_eq!(got[3], body("[]"));
        assert_eq!(got.len(), 4);
    }

    #[tokio::test]
    async fn binary_junk_without_a_line_break_is_skipped_and_the_frame_after_it_kept() {
        let mut input = vec![0u8, 0xff, 0xfe, b'x', 0xc3, 0x28, 0x80];
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let got = frames(&input).await;
        assert!(bad(&got[0]).contains("7 stray bytes"), "{got:?}");
        assert_eq!(got[1], body("{}"), "{got:?}");
        assert_eq!(got.len(), 2);
        // longer than a header line may be, with the header cut where a read ends
        for cut in [MAX_HEADER_LINE - 7, MAX_HEADER_LINE - 1, MAX_HEADER_LINE, MAX_HEADER_LINE + 3] {
            let mut input: Vec<u8> = (0..cut).map(|i| [0x00, 0xff, 0x7f, 0xc3][i % 4]).collect();
            input.extend_from_slice(b"content-length: 2\r\n\r\n[]");
            let got = frames(&input).await;
            assert!(bad(&got[0]).contains(&format!("{cut} stray bytes")), "{cut}: {got:?}");
            assert_eq!(got[1], body("[]"), "{cut}: {got:?}");
            assert_eq!(got.len(), 2, "{cut}: {got:?}");
        }
    }

    #[tokio::test]
    async fn a_length_counted_in_characters_does_not_break_the_frames_after_it() {
        // "é" is two bytes; the client said 13 for a 14-byte body
        let input = "Content-Length: 13\r\n\r\n{\"x\":\"é\",\"y\":1}Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]".as_bytes();
        let got = frames(input).await;
        assert!(matches!(&got[0], Frame::Body(body) if body.len() == 13), "{got:?}");
        assert!(bad(&got[1]).contains("3 stray bytes"), "{got:?}");
        assert_eq!(got[2], body("{}"), "back in step: {got:?}");
        assert_eq!(got[3], body("[]"));
    }

    #[tokio::test]
    async fn an_absurd_length_is_refused_at_once_and_reading_resumes_at_the_next_header() {
        let input =
            b"Content-Length: 1000000000000\r\n\r\n{\"jsonrpc\":\"2.0\"}\r\nContent-Length: 2\r\n\r\n{}";
        let got = frames(input).await;
        assert!(bad(&got[0]).contains("larger than the"), "{got:?}");
        assert_eq!(got[1], body("{}"), "the skipped body is not reported again: {got:?}");
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn a_frame_written_is_read_back_blocking_and_a_block_without_a_length_is_an_error() {
        let mut wire = frame(b"{\"a\":1}");
        wire.extend_from_slice(b"Content-Type: x\r\ncontent-length: 2\r\n\r\n[]");
        let mut reader = std::io::BufReader::new(&wire[..]);
        assert_eq!(read_blocking(&mut reader).unwrap().as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(read_blocking(&mut reader).unwrap().as_deref(), Some(&b"[]"[..]));
        assert_eq!(read_blocking(&mut reader).unwrap(), None);
        for bad in [&b"Content-Type: x\r\n\r\n{}"[..], b"Content-Length: 99999999999\r\n\r\n{}"] {
            let error = read_blocking(&mut std::io::BufReader::new(bad)).unwrap_err();
            assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        }
    }
}
