//! turno: a runtime for message-driven software.
