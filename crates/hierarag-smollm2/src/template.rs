//! The chat template: ChatML, as the GGUF's `tokenizer.chat_template` renders it.
//!
//! SmolLM2's template (a Jinja program) writes each message as
//! `<|im_start|>ROLE\nCONTENT<|im_end|>\n`, puts a default system message first when the
//! conversation does not start with one, and ends with `<|im_start|>assistant\n`. Rather than
//! embed a Jinja interpreter, this recognises ChatML templates and reads the default system
//! message out of the template text; llama.cpp's server renders the same string (checked in the
//! tests through its `/apply-template` endpoint).

use hierarag_llm::{Message, Role};

/// A ChatML template, with the default system message its Jinja source carries, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTemplate {
    default_system: Option<String>,
}

const IM_START: &str = "<|im_start|>";
const IM_END: &str = "<|im_end|>";

impl ChatTemplate {
    /// Recognises a ChatML Jinja template; `None` for any other template.
    pub fn from_jinja(source: &str) -> Option<ChatTemplate> {
        if !source.contains(IM_START) || !source.contains(IM_END) {
            return None;
        }
        // The default system message is the literal system block the template emits when the
        // first message is not a system message.
        let default_system = if source.contains("!= 'system'") || source.contains("!= \"system\"") {
            let opening = format!("{IM_START}system\n");
            source.find(&opening).and_then(|at| {
                let rest = &source[at + opening.len()..];
                rest.find(IM_END).map(|end| rest[..end].to_owned())
            })
        } else {
            None
        };
        Some(ChatTemplate { default_system })
    }

    /// Plain ChatML without a default system message.
    pub fn chatml() -> ChatTemplate {
        ChatTemplate {
            default_system: None,
        }
    }

    /// The system message used when a conversation has none.
    pub fn default_system(&self) -> Option<&str> {
        self.default_system.as_deref()
    }

    /// The prompt for `messages`, ending with the assistant's opening, ready to tokenize with
    /// special tokens parsed.
    pub fn render(&self, messages: &[Message]) -> String {
        let mut prompt = String::new();
        if let Some(system) = &self.default_system
            && messages.first().is_none_or(|m| m.role != Role::System)
        {
            push_message(&mut prompt, "system", system);
        }
        for message in messages {
            let role = match message.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            push_message(&mut prompt, role, &message.content);
        }
        prompt.push_str(IM_START);
        prompt.push_str("assistant\n");
        prompt
    }
}

fn push_message(prompt: &mut String, role: &str, content: &str) {
    prompt.push_str(IM_START);
    prompt.push_str(role);
    prompt.push('\n');
    prompt.push_str(content);
    prompt.push_str(IM_END);
    prompt.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOLLM2_TEMPLATE: &str = "{% for message in messages %}{% if loop.first and \
        messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant \
        named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + \
        message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if \
        add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn smollm2_template_adds_its_default_system_message() {
        let template = ChatTemplate::from_jinja(SMOLLM2_TEMPLATE).unwrap();
        assert_eq!(
            template.render(&[Message::user("Hi there")]),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
             Face<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(
            template.render(&[Message::system("Be brief."), Message::user("Hi there")]),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi \
             there<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn other_templates_are_not_chatml() {
        assert_eq!(ChatTemplate::from_jinja("{{ bos_token }}[INST]"), None);
    }
}
