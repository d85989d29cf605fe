/* PLACEHOLDER: being written */
