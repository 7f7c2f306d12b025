//! The other framing: one JSON-RPC message per line, as ACP and MCP speak it over stdio. A line
//! longer than a bound is skipped up to its end and said to be, never buffered whole; lines
//! go out in one write each with a flush.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Lines longer than this are skipped rather than buffered: 256 MiB (a prompt's eight images
/// of 10 MiB each fit many times over).
pub const MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// What one read of the input gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line's text, without its line break; never blank.
    Text(String),
    /// A line of more than the bound, skipped: how many bytes it had.
    TooLong(usize),
}

/// Reads lines of at most `max` bytes, passing over blank ones.
pub struct LineReader<R> {
    input: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(input: R, max: usize) -> LineReader<R> {
        LineReader { input, max }
    }

    /// The next line; `None` at the end of the input.
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let mut skipped = 0usize;
            loop {
                let available = self.input.fill_buf().await?;
                if available.is_empty() {
                    break;
                }
                let (take, ends) = match available.iter().position(|&b| b == b'\n') {
                    Some(at) => (at + 1, true),
                    None => (available.len(), false),
                };
                let content = take - usize::from(ends);
                if skipped > 0 || line.len() + content > self.max {
                    skipped += line.len() + take;
                    line.clear();
                } else {
                    line.extend_from_slice(&available[..take]);
                }
                self.input.consume(take);
                if ends {
                    break;
                }
            }
            if skipped > 0 {
                return Ok(Some(Line::TooLong(skipped)));
            }
            if line.is_empty() {
                return Ok(None);
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if !text.trim().is_empty() {
                return Ok(Some(Line::Text(text.to_string())));
            }
        }
    }
}

/// Writes each line the channel brings, then a line break, until the channel closes or the
/// output does (said in the log).
pub async fn write_lines<W: AsyncWrite + Unpin>(mut output: W, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(line) = lines.recv().await {
        let mut message = line.into_bytes();
        message.push(b'\n');
        let written = async {
            output.write_all(&message).await?;
            output.flush().await
        };
        if let Err(err) = written.await {
            tracing::warn!("the client's end of the output closed: {err}");
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        while let Some(line) = reader.next().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_come_whole_blank_ones_passed_over_and_a_long_one_skipped_to_its_end() {
        let text = |s: &str| Line::Text(s.to_string());
        let got = lines(b"{\"a\":1}\r\n\n  \n0123456789abcdef\n{}\n[1]", 10).await;
        assert_eq!(got, [text("{\"a\":1}"), Line::TooLong(17), text("{}"), text("[1]")]);
        // exactly the bound, with and without its line break
        assert_eq!(lines(b"0123456789\n0123456789", 10).await, [text("0123456789"), text("0123456789")]);
        assert_eq!(lines(b"01234567890", 10).await, [Line::TooLong(11)]);
        assert!(lines(b"", 10).await.is_empty());
    }

    #[tokio::test]
    async fn each_line_goes_out_with_its_break() {
        let (send, receive) = mpsc::unbounded_channel();
        send.send("{}".to_string()).unwrap();
        send.send("[1]".to_string()).unwrap();
        drop(send);
        let mut out = Vec::new();
        write_lines(&mut out, receive).await;
        assert_eq!(out, b"{}\n[1]\n");
    }
}
