//! Commands answered by the daemon over its control socket.

use super::local::block_on;
use super::output::print_json;
use super::Cli;
use crate::control::{client, Request};

/// Send `request` to the daemon, print its answer, return its exit code.
pub fn call(cli: &Cli, request: &Request, json: bool) -> u8 {
    block_on(async {
        let form = if json {
            client::Form::Json
        } else {
            client::Form::Text
        };
        match client::call_for(&cli.control_socket, request, form).await {
            Ok(response) => {
                if json {
                    print_json(&response.json);
                } else {
                    print!("{}", response.text);
                    if !response.text.ends_with('\n') {
                        println!();
                    }
                }
                response.exit
            }
            Err(e) => {
                eprintln!("mesh-host: {e}");
                super::EXIT_FAILED
            }
        }
    })
}
